package trim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"nudge.dev/nudge/internal/csi"
)

// PodStatus is the cache transform for SecretProviderClassPodStatuses: it
// keeps name, namespace, resourceVersion and of the status what csi.PodStatus
// holds (no labels, annotations, owners, pod name or target path). Other
// objects pass through unchanged. It is idempotent.
func PodStatus(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != csi.PodStatusGVK {
		return obj, nil
	}
	s, _ := csi.PodStatusOf(u)
	objects := make([]any, len(s.Objects))
	for i, o := range s.Objects {
		objects[i] = map[string]any{"id": o.ID, "version": o.Version}
	}
	meta := map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "resourceVersion": u.GetResourceVersion()}
	if t := u.GetDeletionTimestamp(); t != nil {
		meta["deletionTimestamp"] = u.Object["metadata"].(map[string]any)["deletionTimestamp"]
	}
	u.Object = map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta,
		"status": map[string]any{"secretProviderClassName": s.Class, "mounted": s.Mounted, "objects": objects},
	}
	return u, nil
}
