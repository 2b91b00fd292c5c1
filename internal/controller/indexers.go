package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/sources"
)

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
