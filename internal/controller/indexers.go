package controller

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// workloadsIn maps a Namespace to a request for every workload of kind k in
// it, from the cache.
func (r *Reconciler) workloadsIn(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.listIn(ctx, ns, func(client.Object) bool { return true })
}

// managedIn maps a Namespace to a request for every workload of kind k in
// it that carries nudge's applied state, from the cache: those a pause of
// the Namespace may hold (one without is reconciled on its own events).
func (r *Reconciler) managedIn(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.listIn(ctx, ns, func(o client.Object) bool { return o.GetAnnotations()[workload.AppliedAnnotation] != "" })
}

// listIn returns a request for every workload of kind k in Namespace ns
// that keep passes, from the cache.
func (r *Reconciler) listIn(ctx context.Context, ns client.Object, keep func(client.Object) bool) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list workloads of a namespace from the cache", "kind", r.Kind.Name(), "namespace", ns.GetName())
		return nil
	}
	var out []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if m, ok := o.(client.Object); ok && keep(m) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
		return nil
	})
	return out
}

// workloadsOf maps a source to a request for every workload of kind k that
// may reference it, reading only the cache's index.
func (r *Reconciler) workloadsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := r.index.Workloads(ctx, obj)
	if log := ctrl.LoggerFrom(ctx).V(2); log.Enabled() {
		src, _ := sources.SourceOf(obj)
		log.Info("A source changed", "kind", r.Kind.Name(), "source", src.String(), "resourceVersion", obj.GetResourceVersion(), "workloads", len(reqs))
	}
	now := r.now()
	for _, req := range reqs {
		r.memory.Unrolled.Saw(req.NamespacedName, now)
	}
	r.expectWave(ctx, reqs)
	return reqs
}
