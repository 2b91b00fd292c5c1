package watch

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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

// InNamespace maps a Namespace to a request for every object in it that
// keep passes (nil: every object), listed from reader (a cache) as newList
// makes; a list that fails is logged and maps to nothing.
func InNamespace(reader client.Reader, newList func() client.ObjectList, keep func(client.Object) bool) handler.MapFunc {
	return func(ctx context.Context, ns client.Object) []reconcile.Request {
		list := newList()
		if err := reader.List(ctx, list, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list the objects of a namespace from the cache", "namespace", ns.GetName())
			return nil
		}
		var out []reconcile.Request
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			if m, ok := o.(client.Object); ok && (keep == nil || keep(m)) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			}
			return nil
		})
		return out
	}
}
