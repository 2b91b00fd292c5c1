package chart

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"nudge.dev/nudge/test/chart/charttest"
)

// checkInvariants checks what holds for every rendering: least privilege,
// restricted pod security, leader election with a Lease named after the
// release and a PodDisruptionBudget with several replicas, Argo Rollouts
// handled unless isArgoRollouts=false, the ServiceMonitor only when asked for.
func checkInvariants(t *testing.T, r rendered, values charttest.Values) {
	t.Helper()
	g := NewWithT(t)
	reloader, _ := values["reloader"].(map[string]any)
	global := reloader["watchGlobally"] != false

	for _, o := range r.m {
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "RoleBinding"}, o.GetKind()) {
			g.Expect(o.GetNamespace()).To(Equal(namespace), "%s %s in the release namespace", o.GetKind(), o.GetName())
		}
		if !global {
			g.Expect(o.GetKind()).NotTo(BeElementOf("ClusterRole", "ClusterRoleBinding"))
			g.Expect(o.GetNamespace()).To(Equal(namespace), "%s %s", o.GetKind(), o.GetName())
		}
	}
	for _, gr := range r.grants {
		rule := gr.rule
		for _, field := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources} {
			g.Expect(field).NotTo(ContainElement("*"), "%s: no wildcard", gr.holder)
		}
		g.Expect(rule.NonResourceURLs).To(BeEmpty())
		g.Expect(rule.APIGroups).NotTo(ContainElement("apiextensions.k8s.io"), "%s: Argo Rollouts is found by discovery", gr.holder)
		if slices.Contains(rule.Resources, "leases") && !slices.Equal(rule.Verbs, []string{"create"}) {
			g.Expect(r.opts.LeaderElect).To(BeTrue(), "%s: Leases with leader election only", gr.holder)
			g.Expect(gr.scope).To(Equal(namespace), gr.holder)
			g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.LeaderElectionID), "%s: its own Lease alone", gr.holder)
		}
		if slices.Contains(rule.APIGroups, "argoproj.io") {
			g.Expect(r.opts.Ignores("rollouts")).To(BeFalse(), "%s: no permission on Rollouts nudge ignores", gr.holder)
			g.Expect(rule.Resources).To(ConsistOf("rollouts"), gr.holder)
			g.Expect(rule.Verbs).To(ConsistOf("list", "watch", "patch"), gr.holder)
		}
		g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("escalate", "bind", "impersonate", "deletecollection")), gr.holder)
		for _, res := range rule.Resources {
			g.Expect(res).NotTo(Or(Equal("pods"), HavePrefix("pods/")), "%s: no Pods", gr.holder)
			if res == "configmaps" {
				g.Expect(rule.Verbs).To(ConsistOf("list", "watch"), "%s: ConfigMaps are never written", gr.holder)
			}
			if res == "secrets" && !slices.Equal(rule.Verbs, []string{"list", "watch"}) {
				g.Expect(gr.scope).To(Equal(namespace), "%s: no Secret written or got outside the release namespace", gr.holder)
				g.Expect(rule.Verbs).To(Or(Equal([]string{"create"}), Equal([]string{"get"})), gr.holder)
				if slices.Contains(rule.Verbs, "get") {
					g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.KeySecret), "%s: get the key Secret alone", gr.holder)
				}
			}
		}
	}

	spec := r.deploy.Spec.Template.Spec
	g.Expect(spec.Containers).To(HaveLen(1))
	c := spec.Containers[0]
	pod := spec.SecurityContext
	g.Expect(pod).NotTo(BeNil())
	g.Expect(pod.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
	g.Expect(c.SecurityContext).NotTo(BeNil())
	g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.Privileged).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.Capabilities).To(HaveValue(HaveField("Drop", Equal([]corev1.Capability{"ALL"}))))
	g.Expect(c.SecurityContext.Capabilities.Add).To(BeEmpty())
	g.Expect(spec.HostNetwork || spec.HostPID || spec.HostIPC).To(BeFalse())
	g.Expect(spec.Volumes).To(Or(BeEmpty(), ConsistOf(And(HaveField("Name", "custom-kinds"), HaveField("ConfigMap", Not(BeNil()))))),
		"no volume but the custom kinds' ConfigMap")

	g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "POD_NAMESPACE"),
		HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace"))))
	g.Expect(c.LivenessProbe).To(HaveValue(HaveField("HTTPGet.Path", "/healthz")))
	g.Expect(c.ReadinessProbe).To(HaveValue(HaveField("HTTPGet.Path", "/readyz")))
	g.Expect(c.Ports).To(ContainElement(And(HaveField("Name", "probes"), HaveField("ContainerPort", BeEquivalentTo(8081)))))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))

	replicas := int32(1)
	if r.deploy.Spec.Replicas != nil {
		replicas = *r.deploy.Spec.Replicas
	}
	g.Expect(r.opts.LeaderElect).To(Equal(replicas > 1 || reloader["enableHA"] == true), "leader election")
	if r.opts.LeaderElect {
		g.Expect(r.opts.LeaderElectionID).To(Equal(r.deploy.Name), "the Lease named after the release's full name")
	}
	g.Expect(r.opts.Ignores("rollouts")).To(Equal(reloader["isArgoRollouts"] == false), "Argo Rollouts handled unless isArgoRollouts=false")
	if replicas > 1 {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(BeEmpty())
	}
	metrics, _ := values["metrics"].(map[string]any)
	monitor, _ := metrics["serviceMonitor"].(map[string]any)
	if monitor["enabled"] == true {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(BeEmpty())
	}
}

// grant is one rule as it applies: in one namespace, or cluster-wide
// (scope ""), through a binding to the chart's ServiceAccount.
type grant struct {
	holder string // kind/name of the role
	scope  string
	rule   rbacv1.PolicyRule
}

// grants returns every rule of the roles in m as bound by the bindings in
// m, failing t on a binding to another subject or to a role not in m.
func grants(t *testing.T, m charttest.Manifest) []grant {
	t.Helper()
	var out []grant
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range m.OfKind(kind) {
			var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
			charttest.Into(t, o, &b)
			for _, s := range b.Subjects {
				if s.Kind != "ServiceAccount" || s.Namespace != namespace {
					t.Errorf("%s %s binds %s %s/%s, not the chart's ServiceAccount", kind, b.Name, s.Kind, s.Namespace, s.Name)
				}
			}
			role := m.Get(b.RoleRef.Kind, b.RoleRef.Name)
			if role == nil {
				t.Fatalf("%s %s refers to %s %s, not rendered", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			if b.RoleRef.Kind == "Role" && role.GetNamespace() != b.Namespace {
				t.Fatalf("RoleBinding %s/%s refers to a Role of namespace %s", b.Namespace, b.Name, role.GetNamespace())
			}
			var rules rbacv1.ClusterRole // a Role has the same fields
			charttest.Into(t, role, &rules)
			scope := b.Namespace // "" for a ClusterRoleBinding
			for _, rule := range rules.Rules {
				out = append(out, grant{holder: b.RoleRef.Kind + "/" + b.RoleRef.Name, scope: scope, rule: rule})
			}
		}
	}
	return out
}

// can reports whether the chart's ServiceAccount may do verb on resource of
// group in namespace ns ("" means cluster-wide, for a cluster-scoped
// resource or across all namespaces), whatever the object's name.
func (r rendered) can(verb, group, resource, ns string) bool {
	return r.canNamed(verb, group, resource, ns, "")
}

// canNamed is can for the object named name; "" means any name.
func (r rendered) canNamed(verb, group, resource, ns, name string) bool {
	for _, gr := range r.grants {
		if gr.scope != "" && gr.scope != ns {
			continue
		}
		rule := gr.rule
		named := len(rule.ResourceNames) == 0 || (name != "" && slices.Contains(rule.ResourceNames, name))
		if named && slices.Contains(rule.Verbs, verb) &&
			slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) {
			return true
		}
	}
	return false
}
