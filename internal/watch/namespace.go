package watch

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Namespace returns an empty Namespace to watch or read as metadata only.
func Namespace() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// AnnotationChanged passes an update of an object whose annotation key
// changed its value (set, removed or rewritten), and no other event: an
// informer's first list and every other edit pass nothing.
func AnnotationChanged(key string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return true
			}
			was, had := e.ObjectOld.GetAnnotations()[key]
			is, has := e.ObjectNew.GetAnnotations()[key]
			return was != is || had != has
		},
	}
}
