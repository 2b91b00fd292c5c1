package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
)

// tenants is one test of what crosses namespaces: the test's namespace
// (the workload's) and another one, Other, both watched by the test's nudge.
type tenants struct {
	*env
	Other string
}

// setupTenants creates the test's namespace and another, without a nudge.
func setupTenants(t *testing.T) *tenants {
	e := setup(t, false, nil)
	other, err := suite.Plane.GenerateNamespace(e.Ctx, "other-")
	e.G.Expect(err).NotTo(HaveOccurred())
	return &tenants{env: e, Other: other}
}

// start starts a nudge watching both namespaces, with no rollout window
// and mutate applied to its options.
func (e *tenants) start(mutate func(*options.Options)) {
	e.T.Helper()
	e.Nudge = nt.Start(e.T, suite.Plane.Config(), e.NS, func(o *options.Options) {
		o.Namespaces, o.RolloutWindow = []string{e.NS, e.Other}, 0
		if mutate != nil {
			mutate(o)
		}
	})
}

// updateOther updates the ConfigMap name of the other namespace: its key
// "v" becomes v.
func (e *tenants) updateOther(name, v string) {
	e.T.Helper()
	var cm corev1.ConfigMap
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.Other, Name: name}, &cm)).To(Succeed())
	cm.Data["v"] = v
	e.G.Expect(suite.K8s.Update(e.Ctx, &cm)).To(Succeed())
}

func deny(o *options.Options) { o.CrossNamespaceReferences = "deny" }

// With --cross-namespace-references=deny a source named in another
// namespace is refused: a Warning CrossNamespaceRefused and a log line say
// so, it is never read, its changes roll nothing, and the workload's own
// sources still roll it. Switching the flag never rolls by itself: from
// allow to deny the refused source leaves the applied state with a
// baseline, from deny to allow it comes back with one; its next change then
// rolls.
func TestCrossNamespaceReferenceDenied(t *testing.T) {
	e := setupTenants(t)
	e.Create(nt.ConfigMap(e.Other, "ca", map[string]string{"v": "1"}), nt.ConfigMap(e.NS, "app", map[string]string{"v": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"wave.pusher.com/extra-configmaps": e.Other + "/ca", "nudge.dev/auto": "true"},
			nt.EnvFrom("ConfigMap", "app")))
	e.start(nil)
	e.Baselined("web")
	e.updateOther("ca", "2")
	e.RolledTo("web", 1) // allowed, the default: Wave's rule

	e.Nudge.Stop(t)
	e.start(deny)
	e.G.Eventually(e.Events("web", record.ReasonCrossNamespaceRefused)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("ConfigMap "+e.Other+"/ca"), ContainSubstring("--cross-namespace-references=deny")))),
		"one Warning naming the source and the flag")
	e.G.Eventually(e.Nudge.Logs).WithTimeout(10*time.Second).Should(And(ContainSubstring(`"reason":"CrossNamespaceRefused"`),
		ContainSubstring(e.Other+"/ca")), "a log line says so too")
	e.G.Eventually(func() string { return e.Deployment("web").Annotations["nudge.dev/applied-fingerprint"] }).
		WithTimeout(10*time.Second).ShouldNot(ContainSubstring(e.Other), "the refused source left the applied state")
	e.RolledTo("web", 1)
	e.updateOther("ca", "3")
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(Equal(int64(1)), "a refused source's change rolls nothing")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["v"] = "2" })
	e.RolledTo("web", 2)

	e.Nudge.Stop(t)
	e.start(nil)
	e.G.Eventually(func() string { return e.Deployment("web").Annotations["nudge.dev/applied-fingerprint"] }).
		WithTimeout(10*time.Second).Should(ContainSubstring(e.Other), "allowed again: the source back in the applied state")
	e.RolledTo("web", 2)
	e.updateOther("ca", "4")
	e.RolledTo("web", 3)
}

// A workload that names only refused sources is told so, and nudge never
// reads them: a source created, changed and deleted in the other namespace
// rolls nothing and warns of nothing more (no SourceMissing).
func TestCrossNamespaceReferenceDeniedIsNeverRead(t *testing.T) {
	e := setupTenants(t)
	e.Create(nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/secrets": e.Other + "/db"}))
	e.start(deny)
	e.Baselined("web")
	e.G.Eventually(e.Events("web", record.ReasonCrossNamespaceRefused)).WithTimeout(10 * time.Second).Should(HaveLen(1))
	e.Create(nt.Secret(e.Other, "db", map[string]string{"v": "1"}))
	var s corev1.Secret
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.Other, Name: "db"}, &s)).To(Succeed())
	s.Data["v"] = []byte("2")
	e.G.Expect(suite.K8s.Update(e.Ctx, &s)).To(Succeed())
	e.G.Expect(suite.K8s.Delete(e.Ctx, &s)).To(Succeed())
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3 * time.Second).Should(BeZero())
	e.G.Expect(e.Events("web", record.ReasonSourceMissing)()).To(BeEmpty(), "nothing of the source's existence reaches the workload")
	e.G.Expect(e.Events("web", record.ReasonCrossNamespaceRefused)()).To(HaveLen(1), "one Warning, whatever the source does")
}

// A producer's reason and message stay in its namespace: a workload that
// names another namespace's Secret (allowed) is rolled past
// --producer-ready-timeout with a Warning that says only that the producer
// was not ready, without its name, reason or message.
func TestCrossNamespaceProducerReasonStaysHome(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))
	e := setupTenants(t)
	g := gated{e.env}
	es := g.producerObj("ExternalSecret", "db", "db")
	es.SetNamespace(e.Other)
	e.Create(es)
	setReady := func(status, message string) {
		e.G.Eventually(func() error {
			if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(es), es); err != nil {
				return err
			}
			es.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status,
				"reason": "SecretSyncedError", "message": message, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
			return suite.K8s.Status().Update(e.Ctx, es)
		}).WithTimeout(10*time.Second).Should(Succeed(), "setting Ready=%s", status)
	}
	setReady("True", "synced")
	secret := nt.Secret(e.Other, "db", map[string]string{"v": "1"})
	controller := true
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: es.GetAPIVersion(), Kind: es.GetKind(), Name: es.GetName(),
		UID: es.GetUID(), Controller: &controller}}
	e.Create(secret, nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/secrets": e.Other + "/db"}))
	e.start(func(o *options.Options) { o.ProducerReadyTimeout = 3 * time.Second })
	e.Baselined("web")

	const private = "vault path team-b/prod/db is forbidden"
	setReady("False", private)
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data["v"] = []byte("2")
	e.G.Expect(suite.K8s.Update(e.Ctx, secret)).To(Succeed())
	e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "the gate holds within the timeout")
	e.RolledTo("web", 1)
	e.G.Eventually(e.Events("web", record.ReasonProducerNotReady)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("Secret "+e.Other+"/db (its producer: not ready)"),
			Not(ContainSubstring(private)), Not(ContainSubstring("SecretSyncedError")), Not(ContainSubstring("ExternalSecret"))))),
		"a Warning without the other namespace's producer, reason or message")
}
