package binding_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// nudge_value_bindings counts the bindings by the status and reason of their
// Ready condition, follows a binding from one reason to another, and forgets
// a deleted binding, finalizer or not. Not parallel: the gauge is the
// process's (nudge in this process), so no other test's nudge may run.
func TestValueBindingsGauge(t *testing.T) {
	installCRDs(t)
	e := &env{t: t, g: NewWithT(t), ctx: t.Context()}
	ns, err := suite.Plane.GenerateNamespace(e.ctx, "vb-")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.ns = ns
	e.nudge = e.start(nil)

	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	// One Harbor per binding: bindings of one target would take turns.
	for _, name := range []string{"harbor", "h2", "h3"} {
		e.argoApply(harbor(e.ns, name))
	}
	applied := valueBinding(e.ns, "applied", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	finalized := valueBinding(e.ns, "finalized", "h2", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	finalized.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	missingSource := valueBinding(e.ns, "missing-source", "h3", fromSecret("spec.imageChartStorage.s3.accesskey", "later", "accesskey"))
	missingTarget := valueBinding(e.ns, "missing-target", "absent", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	e.create(applied, finalized, missingSource, missingTarget)

	want := func(counts map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, r := range []string{v1alpha1.ReasonSourceNotFound, v1alpha1.ReasonKeyNotFound, v1alpha1.ReasonTargetNotFound,
			v1alpha1.ReasonInvalidFieldPath, v1alpha1.ReasonInvalidValue, v1alpha1.ReasonRefused, v1alpha1.ReasonConflict} {
			out["False/"+r] = 0
		}
		out["True/"+v1alpha1.ReasonApplied] = 0
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
	e.g.Eventually(bindingsGauge).WithTimeout(30*time.Second).Should(Equal(want(map[string]float64{
		"True/Applied": 2, "False/SourceNotFound": 1, "False/TargetNotFound": 1,
	})), "nudge_value_bindings counts each binding under its reason, every known reason served")

	e.create(nt.Secret(e.ns, "later", map[string]string{"accesskey": "AK2"}))
	e.g.Eventually(bindingsGauge).WithTimeout(30*time.Second).Should(Equal(want(map[string]float64{
		"True/Applied": 3, "False/TargetNotFound": 1,
	})), "a binding whose source appeared moves from SourceNotFound to Applied")

	for _, b := range []*v1alpha1.ValueBinding{finalized, missingTarget} {
		e.g.Expect(suite.K8s.Delete(e.ctx, b)).To(Succeed())
		e.g.Eventually(func() bool {
			return apierrors.IsNotFound(suite.K8s.Get(e.ctx, client.ObjectKeyFromObject(b), &v1alpha1.ValueBinding{}))
		}).WithTimeout(30*time.Second).Should(BeTrue(), "ValueBinding %s gone", b.Name)
	}
	e.g.Eventually(bindingsGauge).WithTimeout(30*time.Second).Should(Equal(want(map[string]float64{
		"True/Applied": 2,
	})), "deleted bindings, one held by a finalizer, no longer count")

	e.nudge.Stop(t)
	e.g.Expect(bindingsGauge()).To(Equal(want(nil)), "a stopped nudge counts no binding")
}

// bindingsGauge returns nudge_value_bindings of this process's registry by
// "ready/reason".
func bindingsGauge() map[string]float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "nudge_value_bindings" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["ready"]+"/"+labels["reason"]] = m.GetGauge().GetValue()
		}
	}
	return out
}
