package chart

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/admission"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// TestRenderAdmissionWebhook: admissionWebhook.enabled serves the webhook
// (its flags, port and certificate volume) and registers it by Service
// with the webhooks of admission.Webhooks, which the tests of package
// admission register by URL; the certificate from cert-manager or Helm;
// nudge's RBAC as without it.
func TestRenderAdmissionWebhook(t *testing.T) {
	const name = release + "-webhook"
	service := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: namespace, Name: name, Path: ptr.To(admission.Path), Port: ptr.To[int32](443),
	}}
	enabled := func(more map[string]any) charttest.Values {
		w := map[string]any{"enabled": true}
		for k, v := range more {
			w[k] = v
		}
		return charttest.Values{"admissionWebhook": w}
	}
	tests := map[string]struct {
		values charttest.Values
		check  func(g Gomega, r rendered, hooks []admissionregistrationv1.MutatingWebhook, cfg *admissionregistrationv1.MutatingWebhookConfiguration)
	}{
		"a certificate of Helm's: its CA in the caBundle, the certificate valid for the Service's name": {
			values: enabled(nil),
			check: func(g Gomega, r rendered, hooks []admissionregistrationv1.MutatingWebhook, cfg *admissionregistrationv1.MutatingWebhookConfiguration) {
				g.Expect(r.m.OfKind("Issuer")).To(BeEmpty())
				g.Expect(r.m.OfKind("Certificate")).To(BeEmpty())
				g.Expect(cfg.Annotations).NotTo(HaveKey("cert-manager.io/inject-ca-from"))
				var s corev1.Secret
				charttest.Into(t, r.m.Get("Secret", release+"-webhook-tls"), &s)
				g.Expect(s.Type).To(Equal(corev1.SecretTypeTLS))
				for _, h := range hooks {
					g.Expect(h.ClientConfig.CABundle).To(Equal(s.Data["ca.crt"]), "%s: the CA of the Secret", h.Name)
				}
				roots := x509.NewCertPool()
				g.Expect(roots.AppendCertsFromPEM(s.Data["ca.crt"])).To(BeTrue())
				block, _ := pem.Decode(s.Data["tls.crt"])
				g.Expect(block).NotTo(BeNil())
				cert, err := x509.ParseCertificate(block.Bytes)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name + "." + namespace + ".svc"})
				g.Expect(err).NotTo(HaveOccurred(), "the certificate valid for the Service, from the CA")
				withCA := service
				withCA.CABundle = s.Data["ca.crt"]
				g.Expect(hooks).To(Equal(admission.Webhooks(withCA, false, nil)))
			},
		},
		"cert-manager: a self-signed Issuer, a Certificate into the Secret, its CA injected": {
			values: enabled(map[string]any{"certManager": map[string]any{"enabled": true}}),
			check: func(g Gomega, r rendered, hooks []admissionregistrationv1.MutatingWebhook, cfg *admissionregistrationv1.MutatingWebhookConfiguration) {
				g.Expect(r.m.Get("Issuer", name)).NotTo(BeNil())
				cert := r.m.Get("Certificate", name)
				g.Expect(cert).NotTo(BeNil())
				g.Expect(cert.Object["spec"]).To(HaveKeyWithValue("secretName", release+"-webhook-tls"))
				g.Expect(cert.Object["spec"]).To(HaveKeyWithValue("dnsNames", ContainElement(name+"."+namespace+".svc")))
				g.Expect(cert.Object["spec"]).To(HaveKeyWithValue("issuerRef", map[string]any{"kind": "Issuer", "name": name}))
				g.Expect(r.m.Get("Secret", release+"-webhook-tls")).To(BeNil(), "the Secret is cert-manager's")
				g.Expect(cfg.Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", namespace+"/"+name))
				g.Expect(hooks).To(Equal(admission.Webhooks(service, false, nil)), "no caBundle: cert-manager's cainjector writes it")
			},
		},
		"cert-manager with an issuer of the user's: no Issuer of the chart's": {
			values: enabled(map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}}),
			check: func(g Gomega, r rendered, _ []admissionregistrationv1.MutatingWebhook, _ *admissionregistrationv1.MutatingWebhookConfiguration) {
				g.Expect(r.m.OfKind("Issuer")).To(BeEmpty())
				g.Expect(r.m.Get("Certificate", name).Object["spec"]).To(HaveKeyWithValue("issuerRef", map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}))
			},
		},
		"Reloader's env-vars strategy: the conditions send templates that carry its env vars": {
			values: charttest.Values{"admissionWebhook": map[string]any{"enabled": true, "certManager": map[string]any{"enabled": true}},
				"reloader": map[string]any{"reloadStrategy": "env-vars"}},
			check: func(g Gomega, r rendered, hooks []admissionregistrationv1.MutatingWebhook, _ *admissionregistrationv1.MutatingWebhookConfiguration) {
				g.Expect(r.opts.ReloadStrategy).To(Equal("env-vars"))
				g.Expect(hooks).To(Equal(admission.Webhooks(service, true, nil)))
			},
		},
		"custom kinds whose trigger is in their pod template get a webhook each": {
			values: charttest.Values{"admissionWebhook": map[string]any{"enabled": true, "certManager": map[string]any{"enabled": true}},
				"customKinds": []any{
					map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service", "resource": "services", "templatePath": "spec.template"},
					map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "resource": "prometheuses",
						"triggerPath": "spec.podMetadata.annotations"},
					map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "resource": "scaledjobs",
						"templatePath": "spec.jobTargetRef.template", "triggerPath": "spec.jobTargetRef.template.metadata.annotations"},
					map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "resource": "helmreleases",
						"templatePath": "spec.values.podTemplate", "triggerPath": "metadata.annotations", "triggerAnnotation": "reconcile.fluxcd.io/requestedAt"},
				}},
			check: func(g Gomega, _ rendered, hooks []admissionregistrationv1.MutatingWebhook, _ *admissionregistrationv1.MutatingWebhookConfiguration) {
				custom := []workload.CustomKind{
					{APIVersion: "serving.knative.dev/v1", Kind: "Service", Resource: "services", TemplatePath: "spec.template"},
					{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Resource: "prometheuses", TriggerPath: "spec.podMetadata.annotations"},
					{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", Resource: "scaledjobs",
						TemplatePath: "spec.jobTargetRef.template", TriggerPath: "spec.jobTargetRef.template.metadata.annotations"},
					{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Resource: "helmreleases",
						TemplatePath: "spec.values.podTemplate", TriggerPath: "metadata.annotations", TriggerAnnotation: "reconcile.fluxcd.io/requestedAt"},
				}
				g.Expect(hooks).To(Equal(admission.Webhooks(service, false, custom)))
				var names []string
				for _, h := range hooks {
					names = append(names, h.Name)
				}
				g.Expect(names).To(ContainElements("services.serving.knative.dev.keep-trigger.nudge.dev", "scaledjobs.keda.sh.keep-trigger.nudge.dev"))
				g.Expect(hooks).To(HaveLen(5), "none for a kind whose trigger is outside its template")
			},
		},
		"another port and timeout": {
			values: enabled(map[string]any{"port": 10250, "timeoutSeconds": 2}),
			check: func(g Gomega, r rendered, hooks []admissionregistrationv1.MutatingWebhook, _ *admissionregistrationv1.MutatingWebhookConfiguration) {
				g.Expect(r.opts.AdmissionWebhookAddr).To(Equal(":10250"))
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Ports).To(ContainElement(And(HaveField("Name", "webhook"), HaveField("ContainerPort", BeEquivalentTo(10250)))))
				for _, h := range hooks {
					g.Expect(h.TimeoutSeconds).To(HaveValue(BeEquivalentTo(2)))
				}
			},
		},
	}
	plain := render(t, nil)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := render(t, tc.values)
			checkInvariants(t, r, tc.values)
			without := plain
			if kinds, ok := tc.values["customKinds"]; ok {
				without = render(t, charttest.Values{"customKinds": kinds})
			}
			g.Expect(r.grants).To(Equal(without.grants), "nudge's RBAC as without the webhook: it reads nothing")
			g.Expect(r.opts.AdmissionWebhook).To(BeTrue())
			g.Expect(r.opts.AdmissionWebhookCertDir).To(Equal("/etc/nudge/webhook-certs"))
			spec := r.deploy.Spec.Template.Spec
			g.Expect(spec.Volumes).To(ContainElement(And(HaveField("Name", "webhook-certs"), HaveField("Secret.SecretName", release+"-webhook-tls"))))
			g.Expect(spec.Containers[0].VolumeMounts).To(ContainElement(And(HaveField("Name", "webhook-certs"), HaveField("MountPath", "/etc/nudge/webhook-certs"), HaveField("ReadOnly", true))))
			var svc corev1.Service
			charttest.Into(t, r.m.Get("Service", release+"-webhook"), &svc)
			g.Expect(svc.Spec.Ports).To(ConsistOf(And(HaveField("Port", BeEquivalentTo(443)), HaveField("TargetPort.StrVal", "webhook"))))
			g.Expect(svc.Spec.Selector).To(Equal(r.deploy.Spec.Selector.MatchLabels))
			cfgs := r.m.OfKind("MutatingWebhookConfiguration")
			g.Expect(cfgs).To(HaveLen(1))
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			charttest.Into(t, cfgs[0], &cfg)
			hooks := cfg.Webhooks
			for i := range hooks {
				g.Expect(hooks[i].NamespaceSelector).To(BeNil(), "every namespace, as nudge watches every one")
			}
			tc.check(g, r, hooks, &cfg)
		})
	}
}

// TestRenderAdmissionWebhookNamespaces: the webhook is sent the writes of
// the namespaces nudge acts in alone, as the flags the chart gives it name
// them (reloader.namespaces, ignoreNamespaces, namespaceSelector):
// admission.NamespaceSelector of the options parsed from the rendered args.
func TestRenderAdmissionWebhookNamespaces(t *testing.T) {
	tests := map[string]struct {
		reloader map[string]any
		// matches and misses are the labels of namespaces the webhook is
		// and is not sent the writes of (kubernetes.io/metadata.name as "name").
		matches, misses []map[string]string
	}{
		"reloader.namespaces": {reloader: map[string]any{"namespaces": "shop,billing"},
			matches: []map[string]string{{"name": "shop"}, {"name": "billing"}}, misses: []map[string]string{{"name": "other"}}},
		"watchGlobally=false": {reloader: map[string]any{"watchGlobally": false},
			matches: []map[string]string{{"name": namespace}}, misses: []map[string]string{{"name": "shop"}}},
		"reloader.ignoreNamespaces": {reloader: map[string]any{"ignoreNamespaces": []string{"kube-system", "kube-public"}},
			matches: []map[string]string{{"name": "shop"}}, misses: []map[string]string{{"name": "kube-system"}, {"name": "kube-public"}}},
		"reloader.namespaceSelector in Kubernetes syntax": {reloader: map[string]any{"namespaceSelector": "team=a,env in (prod,staging),!legacy"},
			matches: []map[string]string{{"name": "shop", "team": "a", "env": "prod"}},
			misses:  []map[string]string{{"name": "shop", "team": "b", "env": "prod"}, {"name": "shop", "team": "a", "env": "dev"}, {"name": "shop", "team": "a", "env": "prod", "legacy": ""}}},
		"reloader.namespaceSelector in Reloader's forms": {reloader: map[string]any{"namespaceSelector": `'team:a',tier:*,zone!=*,"x==y"`},
			matches: []map[string]string{{"name": "shop", "team": "a", "tier": "web", "x": "y"}},
			misses:  []map[string]string{{"name": "shop", "team": "a", "tier": "web", "x": "y", "zone": "eu"}, {"name": "shop", "team": "a", "x": "y"}}},
		"reloader.namespaceSelector with inequalities": {reloader: map[string]any{"namespaceSelector": "env!=dev,tier notin (batch)"},
			matches: []map[string]string{{"name": "shop"}, {"name": "shop", "env": "prod", "tier": "web"}},
			misses:  []map[string]string{{"name": "shop", "env": "dev"}, {"name": "shop", "tier": "batch"}}},
		"namespaces, ignored ones and a selector, all at once": {
			reloader: map[string]any{"namespaces": "shop,billing", "ignoreNamespaces": "billing", "namespaceSelector": "team=a"},
			matches:  []map[string]string{{"name": "shop", "team": "a"}},
			misses:   []map[string]string{{"name": "billing", "team": "a"}, {"name": "shop"}, {"name": "other", "team": "a"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := charttest.Values{"admissionWebhook": map[string]any{"enabled": true}, "reloader": tc.reloader}
			r := render(t, values)
			checkInvariants(t, r, values)
			want, err := admission.NamespaceSelector(r.opts.Namespaces, r.opts.NamespacesToIgnore, r.opts.NamespaceSelector)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(want).NotTo(BeNil())
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			charttest.Into(t, r.m.OfKind("MutatingWebhookConfiguration")[0], &cfg)
			for _, h := range cfg.Webhooks {
				g.Expect(h.NamespaceSelector).NotTo(BeNil(), h.Name)
				g.Expect(requirements(g, h.NamespaceSelector)).To(Equal(requirements(g, want)), "%s: the namespaces of nudge's flags", h.Name)
				sel, err := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
				g.Expect(err).NotTo(HaveOccurred())
				for _, ns := range tc.matches {
					g.Expect(sel.Matches(namespaceLabels(ns))).To(BeTrue(), "%s: namespace %v", h.Name, ns)
				}
				for _, ns := range tc.misses {
					g.Expect(sel.Matches(namespaceLabels(ns))).To(BeFalse(), "%s: namespace %v", h.Name, ns)
				}
			}
		})
	}
}

// requirements returns sel's requirements, each as labels.Selector writes
// it, sorted: equal for two selectors that select alike, however written.
func requirements(g Gomega, sel *metav1.LabelSelector) []string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	g.Expect(err).NotTo(HaveOccurred())
	reqs, _ := s.Requirements()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.String()
	}
	slices.Sort(out)
	return out
}

// namespaceLabels returns a namespace's labels: ns, with "name" as
// kubernetes.io/metadata.name, which the API server sets on every one.
func namespaceLabels(ns map[string]string) labels.Set {
	set := labels.Set{}
	for k, v := range ns {
		if k == "name" {
			k = corev1.LabelMetadataName
		}
		set[k] = v
	}
	return set
}

// TestRenderAdmissionWebhookNetworkPolicy: with reloader.netpol the API
// server may still reach the webhook's port.
func TestRenderAdmissionWebhookNetworkPolicy(t *testing.T) {
	g := NewWithT(t)
	values := charttest.Values{"admissionWebhook": map[string]any{"enabled": true},
		"reloader": map[string]any{"netpol": map[string]any{"enabled": true}}}
	r := render(t, values)
	checkInvariants(t, r, values)
	var np networkingv1.NetworkPolicy
	charttest.Into(t, r.m.OfKind("NetworkPolicy")[0], &np)
	g.Expect(np.Spec.Ingress).To(ContainElement(And(
		HaveField("From", BeEmpty()),
		HaveField("Ports", ConsistOf(HaveField("Port", HaveValue(HaveField("StrVal", "webhook"))))))))
}
