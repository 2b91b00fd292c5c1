package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/controller"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
)

// A workload write is answered with the workload's metadata alone: the
// object written takes the answer's resourceVersion, labels, annotations
// and selfLink (the cache's seal mark dropped), and keeps the spec it was
// read with. A CronJob that a Job is started from after its rollout is
// answered whole: the Job copies its job template.
func TestApplyAnswer(t *testing.T) {
	e := setup(t, false, nil)
	e.Create(nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	change := func(obj client.Object) workload.Change {
		return workload.Change{
			ResourceVersion:     obj.GetResourceVersion(),
			Labels:              map[string]*string{workload.SealLabel: ptr.To("seal")},
			Annotations:         map[string]*string{workload.AppliedAnnotation: ptr.To("state")},
			Spec:                map[string]any{"paused": true},
			TemplateAnnotations: map[string]string{workload.RestartedAtAnnotation: "now"},
		}
	}

	r := &controller.Reconciler{Client: k8s, Kind: workload.Deployment}
	d := e.Deployment("web")
	read := d.ResourceVersion
	d.SetSelfLink(workload.CachedSealMark + "stale")
	e.G.Expect(r.Apply(e.Ctx, d, change(d))).To(Succeed())
	live := e.Deployment("web")
	e.G.Expect(d.ResourceVersion).To(Equal(live.ResourceVersion), "resourceVersion of the answer")
	e.G.Expect(d.ResourceVersion).NotTo(Equal(read))
	e.G.Expect(d.Labels).To(HaveKeyWithValue(workload.SealLabel, "seal"))
	e.G.Expect(d.Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, "state"))
	seal, _ := workload.Seal(d)
	e.G.Expect(seal).To(Equal("seal"), "the seal of the answer, not the cache's mark")
	e.G.Expect(live.Spec.Paused).To(BeTrue(), "the patch's spec was written")
	e.G.Expect(d.Spec.Paused).To(BeFalse(), "the spec read is kept: the answer holds no spec")
	e.G.Expect(d.Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))

	e.Create(cronJob(e.NS, "nightly", auto, nt.EnvFrom("ConfigMap", "app")))
	var cj batchv1.CronJob
	e.G.Expect(k8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: "nightly"}, &cj)).To(Succeed())
	r = &controller.Reconciler{Client: k8s, Kind: workload.CronJob, Behaviour: controller.Behaviour{CronJobStartJob: true}}
	c := change(&cj)
	c.Spec = nil
	e.G.Expect(r.Apply(e.Ctx, &cj, c)).To(Succeed())
	e.G.Expect(cj.Spec.JobTemplate.Spec.Template.Annotations).To(HaveKeyWithValue(workload.RestartedAtAnnotation, "now"),
		"the whole CronJob of the answer")
}
