package workload_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"nudge.dev/nudge/internal/workload"
)

func TestParseCustomKinds(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []workload.CustomKind
		err  string // a substring of the error; "" for none
	}{
		"the three kinds of the docs": {
			yaml: `
- {apiVersion: serving.knative.dev/v1, kind: Service, resource: services, templatePath: spec.template}
- {apiVersion: keda.sh/v1alpha1, kind: ScaledJob, templatePath: spec.jobTargetRef.template}
- {apiVersion: monitoring.coreos.com/v1, kind: Prometheus, triggerPath: spec.podMetadata.annotations}
`,
			want: []workload.CustomKind{
				{APIVersion: "serving.knative.dev/v1", Kind: "Service", Resource: "services", TemplatePath: "spec.template"},
				{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", TemplatePath: "spec.jobTargetRef.template"},
				{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"},
			},
		},
		"Flux's trigger in the object's own annotations": {
			yaml: `[{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, triggerPath: metadata.annotations, triggerAnnotation: reconcile.fluxcd.io/requestedAt}]`,
			want: []workload.CustomKind{{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease",
				TriggerPath: "metadata.annotations", TriggerAnnotation: "reconcile.fluxcd.io/requestedAt"}},
		},
		"an empty file is no kind": {yaml: ``, want: nil},
		"an unknown field is refused (a typo)": {
			yaml: `[{apiVersion: a.io/v1, kind: A, template: spec.template}]`, err: "unknown field",
		},
		"a kind is required": {yaml: `[{apiVersion: a.io/v1, templatePath: spec.template}]`, err: "apiVersion and kind are required"},
		"an apiVersion without a version is refused": {
			yaml: `[{apiVersion: a.io/, kind: A, templatePath: spec.template}]`, err: "is not group/version",
		},
		"a built-in kind is refused": {
			yaml: `[{apiVersion: apps/v1, kind: Deployment, templatePath: spec.template}]`, err: "nudge handles this kind already",
		},
		"a kind listed twice is refused, in any version": {
			yaml: `[{apiVersion: a.io/v1, kind: A, templatePath: spec.t}, {apiVersion: a.io/v2, kind: A, templatePath: spec.t}]`,
			err:  "custom kind 2 (a.io/v2 A): listed twice",
		},
		"no template and no trigger is refused": {
			yaml: `[{apiVersion: a.io/v1, kind: A}]`, err: "triggerPath is required without a templatePath",
		},
		"an empty path segment is refused": {
			yaml: `[{apiVersion: a.io/v1, kind: A, templatePath: spec..template}]`, err: "has an empty segment",
		},
		"a path in the status is refused": {
			yaml: `[{apiVersion: a.io/v1, kind: A, templatePath: spec.t, triggerPath: status.x}]`, err: "is in the status",
		},
		"a template in the metadata is refused": {
			yaml: `[{apiVersion: a.io/v1, kind: A, templatePath: metadata.annotations}]`, err: "is in the metadata",
		},
		"a resource that is not a DNS label is refused": {
			yaml: `[{apiVersion: a.io/v1, kind: A, resource: As, templatePath: spec.t}]`, err: `resource "As"`,
		},
		"every problem is reported": {
			yaml: `[{apiVersion: a.io/v1, kind: A}, {kind: B, templatePath: spec.t}]`,
			err:  "custom kind 2 ( B): apiVersion and kind are required",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := workload.ParseCustomKinds([]byte(tc.yaml))
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestCustomKindAdapter(t *testing.T) {
	knative := workload.CustomKind{APIVersion: "serving.knative.dev/v1", Kind: "Service", TemplatePath: "spec.template"}.Adapter("services")
	prometheus := workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"}.Adapter("prometheuses")
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Service",
		"metadata": map[string]any{"name": "hello", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"a": "1"}},
			"spec": map[string]any{
				"containerConcurrency": int64(10), // Knative's, not a pod spec field
				"containers": []any{map[string]any{"image": "app", "envFrom": []any{
					map[string]any{"configMapRef": map[string]any{"name": "app"}}}}},
			},
		}},
	}}
	for name, tc := range map[string]struct {
		kind workload.Kind
		obj  *unstructured.Unstructured
		want *corev1.PodTemplateSpec
	}{
		"a Knative Service's template is read, its own fields dropped": {kind: knative, obj: svc, want: &corev1.PodTemplateSpec{
			ObjectMeta: metaWithAnnotations(map[string]string{"a": "1"}),
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "app", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}}}},
		}},
		"an object of another kind has none": {kind: prometheus, obj: svc, want: nil},
		"a kind without a template path has an empty one": {kind: prometheus, obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": map[string]any{"name": "p"}}},
			want: &corev1.PodTemplateSpec{}},
		"an object without a template at the path has none": {kind: knative, obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": map[string]any{"name": "s"}}}, want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.kind.Template(tc.obj)).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(knative.Plural()).To(Equal("services"))
	g.Expect(knative.TriggerPath()).To(Equal([]string{"spec", "template", "metadata", "annotations"}), "the default trigger")
	g.Expect(prometheus.TemplatePath()).To(BeEmpty())
}
