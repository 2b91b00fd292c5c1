package nudgetest

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/workload"
)

// The custom kinds the tests configure, as a user would in the custom kinds
// file (see docs/custom-kinds.md).
var (
	KnativeServiceKind = workload.CustomKind{APIVersion: "serving.knative.dev/v1", Kind: "Service",
		Resource: "services", TemplatePath: "spec.template"}
	ScaledJobKind = workload.CustomKind{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob",
		Resource: "scaledjobs", TemplatePath: "spec.jobTargetRef.template"}
	PrometheusKind = workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus",
		Resource: "prometheuses", TriggerPath: "spec.podMetadata.annotations"}
)

// KnativeService returns a Knative Serving Service with annotations on its
// metadata, whose revision template is Template(name, opts...).
func KnativeService(namespace, name string, annotations map[string]string, opts ...PodOption) *unstructured.Unstructured {
	spec := map[string]any{"template": templateMap(name, opts)}
	return custom(KnativeServiceKind, namespace, name, annotations, spec)
}

// ScaledJob returns a KEDA ScaledJob with annotations on its metadata, whose
// job's pod template is Template(name, opts...), started by a cron trigger.
func ScaledJob(namespace, name string, annotations map[string]string, opts ...PodOption) *unstructured.Unstructured {
	opts = append(opts, func(t *corev1.PodTemplateSpec) { t.Spec.RestartPolicy = corev1.RestartPolicyNever })
	spec := map[string]any{
		"jobTargetRef": map[string]any{"template": templateMap(name, opts)},
		"triggers": []any{map[string]any{"type": "cron", "metadata": map[string]any{
			"timezone": "Etc/UTC", "start": "0 * * * *", "end": "30 * * * *", "desiredReplicas": "1"}}},
	}
	return custom(ScaledJobKind, namespace, name, annotations, spec)
}

// Prometheus returns a Prometheus Operator Prometheus of one replica with
// annotations on its metadata; it has no pod template.
func Prometheus(namespace, name string, annotations map[string]string) *unstructured.Unstructured {
	return custom(PrometheusKind, namespace, name, annotations, map[string]any{"replicas": int64(1)})
}

func custom(k workload.CustomKind, namespace, name string, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(k.GroupVersionKind())
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func templateMap(name string, opts []PodOption) map[string]any {
	t := Template(name, opts...)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
	if err != nil {
		panic(err) // a PodTemplateSpec always converts
	}
	return m
}

// CustomKindsFile writes kinds to a custom kinds file in a directory of t's
// and returns its path, for --custom-kinds-file.
func CustomKindsFile(t testing.TB, kinds ...workload.CustomKind) string {
	t.Helper()
	data, err := yaml.Marshal(kinds)
	if err != nil {
		t.Fatalf("encoding custom kinds: %v", err)
	}
	path := filepath.Join(t.TempDir(), "custom-kinds.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("writing the custom kinds file: %v", err)
	}
	return path
}
