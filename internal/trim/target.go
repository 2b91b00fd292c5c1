package trim

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BindingTarget is the transform of the cache of ValueBindings' targets
// (internal/binding): a target keeps its spec and its managedFields (they
// say who owns a bound field), and loses its status and kubectl's
// last-applied-configuration. Other objects pass through unchanged. It is
// idempotent.
func BindingTarget(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		if a := u.GetAnnotations(); a[lastApplied] != "" {
			a = maps.Clone(a)
			delete(a, lastApplied)
			u.SetAnnotations(a)
		}
	}
	return obj, nil
}
