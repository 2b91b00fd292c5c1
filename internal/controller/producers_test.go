package controller_test

import (
	"time"

	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/record"
)

// gated is one test of rule 16: a nudge with no rollout window, and the
// producers (ExternalSecrets, Certificates) of its Secrets.
type gated struct{ *env }

// producerObj returns an ExternalSecret (v1) writing the Secret target, or
// a Certificate writing it, of the test's namespace.
func (e gated) producerObj(kind, name, target string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(e.NS)
	u.SetName(name)
	switch kind {
	case "ExternalSecret":
		u.SetGroupVersionKind(producer.ExternalSecret.WithVersion("v1"))
		u.Object["spec"] = map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"kind": "SecretStore", "name": "vault"},
			"target": map[string]any{"name": target},
			"data":   []any{map[string]any{"secretKey": "v", "remoteRef": map[string]any{"key": "db/" + target}}}}
	default:
		u.SetGroupVersionKind(producer.Certificate.WithVersion("v1"))
		u.Object["spec"] = map[string]any{"secretName": target, "dnsNames": []any{"shop.example.com"},
			"issuerRef": map[string]any{"name": "ca", "kind": "Issuer"}}
	}
	return u
}

// secretOf returns the Secret name written by p: owned by an
// ExternalSecret, annotated by cert-manager for a Certificate.
func (e gated) secretOf(name string, p *unstructured.Unstructured) *corev1.Secret {
	s := nt.Secret(e.NS, name, map[string]string{"v": "1"})
	if p.GetKind() == "ExternalSecret" {
		controller := true
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: p.GetAPIVersion(), Kind: p.GetKind(), Name: p.GetName(),
			UID: p.GetUID(), Controller: &controller}}
	} else {
		s.Annotations = map[string]string{producer.CertificateNameAnnotation: p.GetName()}
	}
	return s
}

// ready sets p's Ready condition, for its generation, through its status.
func (e gated) ready(p *unstructured.Unstructured, status string) {
	e.T.Helper()
	e.G.Eventually(func() error {
		if err := e.K8s.Get(e.Ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		c := map[string]any{"type": "Ready", "status": status, "reason": "Test", "message": "set by the test",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": p.GetGeneration()}
		p.Object["status"] = map[string]any{"conditions": []any{c}}
		return e.K8s.Status().Update(e.Ctx, p)
	}).WithTimeout(10*time.Second).Should(Succeed(), "setting Ready=%s on %s %s", status, p.GetKind(), p.GetName())
}

// Rule 16: a changed Secret rolls its workload only once its producer is
// Ready; two Secrets of one workload changed 2 s apart by two producers
// roll together, once, when both are. For ExternalSecrets (controller
// owner) and cert-manager Certificates (its annotation), with their real
// CRDs.
func TestProducerReadyGate(t *testing.T) {
	for _, kind := range []string{"ExternalSecret", "Certificate"} {
		t.Run(kind, func(t *testing.T) {
			crd := nt.ExternalSecretCRD(t)
			if kind == "Certificate" {
				crd = nt.CertificateCRD(t)
			}
			nt.InstallCRD(t, suite.K8s, crd)
			e := gated{setup(t, false, nil)}
			user, pass := e.producerObj(kind, "user", "user"), e.producerObj(kind, "pass", "pass")
			e.Create(user, pass)
			e.ready(user, "True")
			e.ready(pass, "True")
			e.Create(e.secretOf("user", user), e.secretOf("pass", pass),
				nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("Secret", "user"), nt.EnvFrom("Secret", "pass")))
			e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
			e.Baselined("web")

			e.ready(user, "False")
			e.UpdateSecret("user", func(s *corev1.Secret) { s.Data["v"] = []byte("2") })
			e.ready(pass, "False")
			e.UpdateSecret("pass", func(s *corev1.Secret) { s.Data["v"] = []byte("2") })
			e.G.Consistently(e.Rollouts("web")).WithTimeout(2*time.Second).Should(BeZero(), "no rollout while the producers are not Ready")
			e.ready(user, "True")
			e.G.Consistently(e.Rollouts("web")).WithTimeout(2*time.Second).Should(BeZero(), "no rollout while one producer is not Ready")
			e.ready(pass, "True")
			e.RolledTo("web", 1)

			e.UpdateSecret("user", func(s *corev1.Secret) { s.Data["v"] = []byte("3") })
			e.G.Eventually(e.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(int64(2)), "a producer Ready when the change comes costs no wait")
			e.G.Expect(e.Events("web", record.ReasonProducerNotReady)()).To(BeEmpty())
		})
	}
}

// Rule 16: past --producer-ready-timeout nudge rolls anyway, with a
// Warning ProducerNotReady naming the Secret and its producer.
func TestProducerReadyGateTimesOut(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))
	e := gated{setup(t, false, nil)}
	es := e.producerObj("ExternalSecret", "db", "db")
	e.Create(es)
	e.ready(es, "True")
	e.Create(e.secretOf("db", es), nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("Secret", "db")))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow, o.ProducerReadyTimeout = 0, 3*time.Second })
	e.Baselined("web")
	e.ready(es, "False")
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["v"] = []byte("2") })
	e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "no rollout within the timeout")
	e.RolledTo("web", 1)
	e.G.Eventually(e.Events("web", record.ReasonProducerNotReady)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("Secret "+e.NS+"/db"), ContainSubstring("ExternalSecret "+e.NS+"/db")))),
		"one Warning naming the Secret and its producer")
}
