package ownership_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// Rule 6: a workload rewritten with its manifest (kubectl replace, a GitOps
// tool, an operator) is not rolled again by nudge.
func TestRewrittenWorkloadIsNotRolledAgain(t *testing.T) {
	e := setup(t, true, nil)
	manifest := func() *appsv1.Deployment {
		return nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)

	for range 2 {
		e.G.Eventually(func() error {
			d := manifest()
			d.ResourceVersion = e.Deployment("web").ResourceVersion
			return suite.K8s.Update(e.Ctx, d)
		}).Should(Succeed(), "replacing the Deployment with its manifest")
	}
	// The first replace changed the pod template (the trigger went away):
	// that is its own rollout. The second changed nothing. With
	// --admission-webhook the first changes nothing either
	// (TestOwnerReplaceWithWebhookRollsNothing in internal/admission).
	e.RolledTo("web", 2)
	e.Baselined("web")
	e.G.Expect(e.Deployment("web").Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
}

// Rule 7: kubectl rollout undo is not undone.
func TestRolloutUndoIsKept(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	// What the first ReplicaSet keeps: the Deployment controller copies the
	// Deployment's annotations onto the newest ReplicaSet.
	first := e.Deployment("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)

	// What `kubectl rollout undo` does: the old ReplicaSet's template and
	// annotations replace the Deployment's (labels stay).
	e.G.Eventually(func() error {
		d := e.Deployment("web")
		d.Spec.Template = first.Spec.Template
		d.Annotations = first.Annotations
		return suite.K8s.Update(e.Ctx, d)
	}).Should(Succeed(), "restoring the first revision")
	e.RolledTo("web", 2)
	e.G.Expect(e.Deployment("web").Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
}

// Rule 6: a GitOps tool that keeps a manifest exported from the live object
// (nudge's annotation and seal label included) writes an old, sealed state
// back after every rollout; nudge does not roll for it, and says so.
func TestRestoredStateIsNotRolledAgain(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	exported := e.Deployment("web") // kubectl get -o yaml, committed to Git

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)

	restored := e.Deployment("web")
	restored.Labels, restored.Annotations, restored.Spec.Template = exported.Labels, exported.Annotations, exported.Spec.Template
	e.G.Expect(suite.K8s.Update(e.Ctx, restored)).To(Succeed(), "the GitOps tool applying the exported manifest")
	e.G.Eventually(e.Events("web", record.ReasonStateRestored)).WithTimeout(10*time.Second).ShouldNot(BeEmpty(),
		"a Warning that the state was set back")
	e.RolledTo("web", 2) // the restore's own change of the pod template, and no more
	e.G.Expect(e.Deployment("web").Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, exported.Annotations[workload.AppliedAnnotation]),
		"nothing written over the restored state")
}

// Rule 6 across a restart: nudge tells a written-back state from the
// workload's managedFields, not from a memory of its own writes, so a
// restart between its rollout and the GitOps tool's write-back changes
// nothing.
func TestRestoredStateIsNotRolledAfterARestart(t *testing.T) {
	window := func(o *options.Options) { o.RolloutWindow = 0 }
	e := setup(t, true, window)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	exported := e.Deployment("web")

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, window)

	restored := e.Deployment("web")
	restored.Labels, restored.Annotations, restored.Spec.Template = exported.Labels, exported.Annotations, exported.Spec.Template
	e.G.Expect(suite.K8s.Update(e.Ctx, restored)).To(Succeed(), "the GitOps tool applying the exported manifest")
	e.G.Eventually(e.Events("web", record.ReasonStateRestored)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("set back by "))), "a Warning from the restarted nudge naming the writer")
	e.RolledTo("web", 2) // the restore's own change of the pod template, and no more
	e.G.Expect(e.Deployment("web").Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, exported.Annotations[workload.AppliedAnnotation]),
		"nothing written over the restored state")
}
