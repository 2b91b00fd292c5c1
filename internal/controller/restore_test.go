package controller_test

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
		return nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	}
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}), manifest())
	e.baselined("web")
	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("web", 1)

	for range 2 {
		e.g.Eventually(func() error {
			d := manifest()
			d.ResourceVersion = e.deployment("web").ResourceVersion
			return k8s.Update(e.ctx, d)
		}).Should(Succeed(), "replacing the Deployment with its manifest")
	}
	// The first replace changed the pod template (the trigger went away):
	// that is its own rollout. The second changed nothing.
	e.rolledTo("web", 2)
	e.baselined("web")
	e.g.Expect(e.deployment("web").Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
}

// Rule 7: kubectl rollout undo is not undone.
func TestRolloutUndoIsKept(t *testing.T) {
	e := setup(t, true, nil)
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.baselined("web")
	// What the first ReplicaSet keeps: the Deployment controller copies the
	// Deployment's annotations onto the newest ReplicaSet.
	first := e.deployment("web")
	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("web", 1)

	// What `kubectl rollout undo` does: the old ReplicaSet's template and
	// annotations replace the Deployment's (labels stay).
	e.g.Eventually(func() error {
		d := e.deployment("web")
		d.Spec.Template = first.Spec.Template
		d.Annotations = first.Annotations
		return k8s.Update(e.ctx, d)
	}).Should(Succeed(), "restoring the first revision")
	e.rolledTo("web", 2)
	e.g.Expect(e.deployment("web").Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
}

// Rule 6: a GitOps tool that keeps a manifest exported from the live object
// (nudge's annotation and seal label included) writes an old, sealed state
// back after every rollout; nudge does not roll for it, and says so.
func TestRestoredStateIsNotRolledAgain(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.baselined("web")
	exported := e.deployment("web") // kubectl get -o yaml, committed to Git

	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("web", 1)

	restored := e.deployment("web")
	restored.Labels, restored.Annotations, restored.Spec.Template = exported.Labels, exported.Annotations, exported.Spec.Template
	e.g.Expect(k8s.Update(e.ctx, restored)).To(Succeed(), "the GitOps tool applying the exported manifest")
	e.g.Eventually(e.events("web", record.ReasonStateRestored)).WithTimeout(10*time.Second).ShouldNot(BeEmpty(),
		"a Warning that the state was set back")
	e.rolledTo("web", 2) // the restore's own change of the pod template, and no more
	e.g.Expect(e.deployment("web").Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, exported.Annotations[workload.AppliedAnnotation]),
		"nothing written over the restored state")
}

// Rule 6 across a restart: nudge tells a written-back state from the
// workload's managedFields, not from a memory of its own writes, so a
// restart between its rollout and the GitOps tool's write-back changes
// nothing.
func TestRestoredStateIsNotRolledAfterARestart(t *testing.T) {
	window := func(o *options.Options) { o.RolloutWindow = 0 }
	e := setup(t, true, window)
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.baselined("web")
	exported := e.deployment("web")

	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("web", 1)
	e.nudge.Stop(t)
	e.nudge = nt.Start(t, plane.Config(), e.ns, window)

	restored := e.deployment("web")
	restored.Labels, restored.Annotations, restored.Spec.Template = exported.Labels, exported.Annotations, exported.Spec.Template
	e.g.Expect(k8s.Update(e.ctx, restored)).To(Succeed(), "the GitOps tool applying the exported manifest")
	e.g.Eventually(e.events("web", record.ReasonStateRestored)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("set back by "))), "a Warning from the restarted nudge naming the writer")
	e.rolledTo("web", 2) // the restore's own change of the pod template, and no more
	e.g.Expect(e.deployment("web").Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, exported.Annotations[workload.AppliedAnnotation]),
		"nothing written over the restored state")
}
