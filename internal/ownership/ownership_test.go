package ownership_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// Rule 6 rests on how the API server records who wrote a field
// (ownership.WrittenBackBy): each case writes nudge's state back, or
// leaves it, the way a tool does, after nudge rolled the Deployment once;
// then the ConfigMap changes again. A write-back is left alone with a
// StateRestored Warning; anything else leaves the state nudge's, and the
// change rolls.
func TestWriteBackIsToldByTheFieldOwner(t *testing.T) {
	tests := map[string]struct {
		// write writes to the Deployment; exported is it as nudge
		// baselined it, current as nudge rolled it.
		write    func(e *env, exported, current *appsv1.Deployment) error
		restored bool
	}{
		"an update with the exported manifest and its managedFields (kubectl replace of get -o yaml --show-managed-fields)": {
			write: func(e *env, exported, current *appsv1.Deployment) error {
				current.Labels, current.Annotations, current.ManagedFields = exported.Labels, exported.Annotations, exported.ManagedFields
				return suite.K8s.Update(e.Ctx, current)
			},
			restored: true,
		},
		"a forced server-side apply of the exported state (Argo CD, Flux)": {
			write: func(e *env, exported, _ *appsv1.Deployment) error {
				return apply(e, exported, "argocd-controller", true)
			},
			restored: true,
		},
		"a server-side apply of the current state shares it": {
			write: func(e *env, _, current *appsv1.Deployment) error {
				return apply(e, current, "kustomize-controller", false)
			},
		},
		"an update of other fields leaves it": {
			write: func(e *env, _, current *appsv1.Deployment) error {
				current.Annotations["team"] = "blue"
				current.Labels = map[string]string{"app": "web", workload.SealLabel: current.Labels[workload.SealLabel]}
				return suite.K8s.Update(e.Ctx, current)
			},
		},
		"a server-side apply without nudge's keys leaves it": {
			write: func(e *env, _, current *appsv1.Deployment) error {
				bare := current.DeepCopy()
				bare.Labels, bare.Annotations = map[string]string{"app": "web"}, map[string]string{"team": "blue"}
				return apply(e, bare, "kustomize-controller", true)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
				nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
			e.Baselined("web")
			exported := e.Deployment("web")
			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			e.RolledTo("web", 1)

			e.G.Expect(tc.write(e, exported, e.Deployment("web"))).To(Succeed())
			if tc.restored {
				e.G.Eventually(e.Events("web", record.ReasonStateRestored)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(),
					"a Warning that the state was set back")
			}
			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
			if tc.restored {
				e.RolledTo("web", 1)
				e.G.Expect(e.Deployment("web").Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, exported.Annotations[workload.AppliedAnnotation]),
					"nothing written over the restored state")
				return
			}
			e.RolledTo("web", 2)
			e.G.Expect(e.Events("web", record.ReasonStateRestored)()).To(BeEmpty(), "no Warning")
		})
	}
}

// Rule 7 with rule 6: `kubectl rollout undo`, with the ConfigMap set back
// too (here while nudge is down), brings an old applied state equal to the
// current one; nudge's baseline then writes only the seal, and the applied
// annotation stays the undo's. The state is nudge's all the same: the next
// change rolls.
func TestUndoToTheCurrentStateIsNudges(t *testing.T) {
	window := func(o *options.Options) { o.RolloutWindow = 0 }
	e := setup(t, true, window)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	first := e.Deployment("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)

	e.Nudge.Stop(t)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "1" })
	undone := e.Deployment("web")
	undone.Spec.Template, undone.Annotations = first.Spec.Template, first.Annotations
	e.G.Expect(suite.K8s.Update(e.Ctx, undone)).To(Succeed(), "restoring the first revision")
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, window)
	e.G.Eventually(func() string { return e.Deployment("web").Labels[workload.SealLabel] }).WithTimeout(20*time.Second).
		Should(Equal(first.Labels[workload.SealLabel]), "nudge to seal the undone state again")
	e.RolledTo("web", 2) // the undo

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	e.RolledTo("web", 3)
	e.G.Expect(e.Events("web", record.ReasonStateRestored)()).To(BeEmpty(), "no Warning")
}

// apply applies d's name, labels and annotations, nothing else, by
// server-side apply under manager.
func apply(e *env, d *appsv1.Deployment, manager string, force bool) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(d.Namespace)
	u.SetName(d.Name)
	u.SetLabels(d.Labels)
	u.SetAnnotations(d.Annotations)
	opts := []client.ApplyOption{client.FieldOwner(manager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return suite.K8s.Apply(e.Ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
}
