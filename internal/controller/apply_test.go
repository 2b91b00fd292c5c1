package controller_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
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

	r := &controller.Reconciler{Client: suite.K8s, Metadata: metadataClient(t), Kind: workload.Deployment}
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
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: "nightly"}, &cj)).To(Succeed())
	r = &controller.Reconciler{Client: suite.K8s, Kind: workload.CronJob, Behaviour: controller.Behaviour{CronJobStartJob: true}}
	c := change(&cj)
	c.Spec = nil
	e.G.Expect(r.Apply(e.Ctx, &cj, c)).To(Succeed())
	e.G.Expect(cj.Spec.JobTemplate.Spec.Template.Annotations).To(HaveKeyWithValue(workload.RestartedAtAnnotation, "now"),
		"the whole CronJob of the answer")
}

// BenchmarkApplyAnswer: what a rollout's write costs this process (the API
// server apart): apply's, answered with the metadata alone through
// client-go's metadata client; the same through controller-runtime's
// client, as apply wrote before (a REST mapping per write); and answered
// whole, in protobuf and in JSON:
//
//	go test ./internal/controller -run - -bench ApplyAnswer -benchmem
func BenchmarkApplyAnswer(b *testing.B) {
	ns, err := suite.Plane.GenerateNamespace(b.Context(), "bench-")
	if err != nil {
		b.Fatal(err)
	}
	d := nt.Deployment(ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("Secret", "creds"))
	if err := suite.K8s.Create(b.Context(), d); err != nil {
		b.Fatal(err)
	}
	jsonCfg := suite.Plane.Config()
	jsonCfg.ContentType = runtime.ContentTypeJSON
	jsonClient, err := nt.Client(jsonCfg)
	if err != nil {
		b.Fatal(err)
	}
	r := &controller.Reconciler{Client: suite.K8s, Metadata: metadataClient(b), Kind: workload.Deployment}
	patch := func(d *appsv1.Deployment, ch workload.Change) client.Patch {
		body, err := ch.Patch(workload.Deployment)
		if err != nil {
			b.Fatal(err)
		}
		return client.RawPatch(types.MergePatchType, body)
	}
	writes := map[string]func(*appsv1.Deployment, workload.Change) error{
		"metadata": func(d *appsv1.Deployment, ch workload.Change) error { return r.Apply(b.Context(), d, ch) },
		"metadata through controller-runtime": func(d *appsv1.Deployment, ch workload.Change) error {
			meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name}}
			if err := suite.K8s.Patch(b.Context(), meta, patch(d, ch)); err != nil {
				return err
			}
			d.ResourceVersion = meta.ResourceVersion
			return nil
		},
		"whole protobuf": func(d *appsv1.Deployment, ch workload.Change) error {
			return suite.K8s.Patch(b.Context(), d, patch(d, ch))
		},
		"whole JSON": func(d *appsv1.Deployment, ch workload.Change) error {
			return jsonClient.Patch(b.Context(), d, patch(d, ch))
		},
	}
	for _, name := range []string{"metadata", "metadata through controller-runtime", "whole protobuf", "whole JSON"} {
		b.Run(name, func(b *testing.B) {
			write := writes[name]
			b.ReportAllocs()
			for b.Loop() {
				if err := write(d, change(d)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// metadataClient returns a metadata client of the plane, as nudge's.
func metadataClient(t testing.TB) metadata.Interface {
	m, err := metadata.NewForConfig(metadata.ConfigFor(suite.Plane.Config()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// change is a rollout's write of d: a new trigger and applied state.
func change(d client.Object) workload.Change {
	stamp := time.Now().Format(time.RFC3339Nano)
	return workload.Change{
		ResourceVersion:     d.GetResourceVersion(),
		Labels:              map[string]*string{workload.SealLabel: ptr.To(fmt.Sprint("seal-", time.Now().UnixNano()))},
		Annotations:         map[string]*string{workload.AppliedAnnotation: ptr.To("state-" + stamp)},
		TemplateAnnotations: map[string]string{workload.RestartedAtAnnotation: stamp},
	}
}
