package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// TestTrimWorkloadsTrimsCustomKinds: a custom kind's object keeps in the
// cache the metadata nudge reads and the references of its pod template,
// nothing else; an object of a kind without a template keeps its metadata.
func TestTrimWorkloadsTrimsCustomKinds(t *testing.T) {
	knative := workload.CustomKind{APIVersion: "serving.knative.dev/v1", Kind: "Service", TemplatePath: "spec.template"}.Adapter("")
	prometheus := workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"}.Adapter("")
	trim := TrimWorkloads(knative, prometheus)
	meta := func() map[string]any {
		return map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "5",
			"labels":        map[string]any{"app": "w", SealLabel: "s"},
			"annotations":   map[string]any{"secret.reloader.stakater.com/reload": "db", lastApplied: "{...}"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}}
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": meta(),
		"spec": map[string]any{
			"traffic": []any{map[string]any{"percent": int64(100)}},
			"template": map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"autoscaling.knative.dev/min-scale": "1"}, "labels": map[string]any{"a": "b"}},
				"spec": map[string]any{"containerConcurrency": int64(10), "containers": []any{map[string]any{
					"image": "app", "args": []any{"--big"},
					"env": []any{map[string]any{"name": "P", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}},
				}}},
			},
		},
		"status": map[string]any{"url": "http://w"},
	}}
	whole := knative.Template(svc)
	g := NewWithT(t)
	_, err := trim(svc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.Object).To(HaveKey("spec"))
	g.Expect(svc.Object["spec"]).To(HaveLen(1), "of the spec only the template")
	g.Expect(svc.Object).NotTo(HaveKey("status"))
	g.Expect(svc.GetLabels()).To(Equal(map[string]string{SealLabel: "s"}))
	g.Expect(svc.GetAnnotations()).To(Equal(map[string]string{"secret.reloader.stakater.com/reload": "db"}))
	g.Expect(svc.GetManagedFields()).To(BeNil())
	trimmed := knative.Template(svc)
	g.Expect(trimmed).NotTo(BeNil())
	g.Expect(refs.FromPodSpec("ns", &trimmed.Spec)).To(Equal(refs.FromPodSpec("ns", &whole.Spec)))
	g.Expect(refs.FromPodSpec("ns", &trimmed.Spec)).To(HaveLen(1))
	g.Expect(trimmed.Annotations).To(Equal(whole.Annotations), "dialects read template annotations")
	g.Expect(trimmed.Labels).To(BeNil())
	g.Expect(trimmed.Spec.Containers[0].Image).To(BeEmpty())
	again := svc.DeepCopy()
	_, _ = trim(again)
	g.Expect(again).To(Equal(svc), "idempotent")

	prom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": meta(),
		"spec": map[string]any{"replicas": int64(2), "podMetadata": map[string]any{"annotations": map[string]any{"x": "y"}}},
	}}
	_, err = trim(prom)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prom.Object).To(HaveKey("metadata"))
	g.Expect(prom.Object).NotTo(HaveKey("spec"), "nothing of the spec is read")
	g.Expect(prometheus.Template(prom)).NotTo(BeNil(), "an empty template: named sources only")

	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": "Other", "metadata": meta(),
		"spec": map[string]any{"a": "b"}, "status": map[string]any{"c": "d"}}}
	_, _ = trim(other)
	g.Expect(other.Object).To(HaveKey("spec"), "an unlisted kind keeps its spec")
	g.Expect(other.Object).NotTo(HaveKey("status"))
}
