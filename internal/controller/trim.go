package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"nudge.dev/nudge/internal/workload"
)

// TrimWorkloads returns the cache transform for the built-in kinds
// (TrimWorkload) and the unstructured kinds ks (Argo Rollouts, custom
// kinds): of an object of one of ks it keeps the metadata TrimWorkload keeps
// and, at the kind's template path, the pod template as trimTemplate trims
// it; nothing else of its spec, nor its status. Like TrimWorkload, it is
// idempotent.
func TrimWorkloads(ks ...workload.Kind) toolscache.TransformFunc {
	byGVK := map[schema.GroupVersionKind]workload.Kind{}
	for _, k := range ks {
		byGVK[k.New().GetObjectKind().GroupVersionKind()] = k
	}
	return func(obj any) (any, error) {
		obj, err := TrimWorkload(obj)
		if u, ok := obj.(*unstructured.Unstructured); ok && err == nil {
			if k, ok := byGVK[u.GroupVersionKind()]; ok {
				trimUnstructured(u, k)
			}
		}
		return obj, err
	}
}

// trimUnstructured trims u, an object of kind k, in place.
func trimUnstructured(u *unstructured.Unstructured, k workload.Kind) {
	tmpl := k.Template(u)
	u.SetLabels(sealOnly(u.GetLabels()))
	u.Object = map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}
	if tmpl == nil || len(k.TemplatePath()) == 0 {
		return
	}
	t := trimTemplate(*tmpl)
	if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t); err == nil {
		_ = unstructured.SetNestedMap(u.Object, m, k.TemplatePath()...)
	}
}
