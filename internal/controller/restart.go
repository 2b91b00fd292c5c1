package controller

import (
	"context"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// restart observes, for o's decision, the restart of its pods through the
// Eviction API (see eviction.Restarter.Observe): rollout.Input.Evicts and
// Restart, and the Warnings found. It returns the API server's error.
func (r *Reconciler) restart(ctx context.Context, o *observed) error {
	w := eviction.Workload{Key: o.key, New: r.Kind.New, Annotations: o.obj.GetAnnotations(),
		Asked: o.spec.Evict, MaxUnavailable: o.spec.MaxUnavailable, Now: o.in.Now}
	if r.Evicting != nil {
		gvk, err := r.Client.GroupVersionKindFor(o.obj)
		if err != nil {
			return err
		}
		w.Kind = gvk.GroupKind()
	}
	seen, err := r.Evicting.Observe(ctx, r.APIReader, w)
	o.in.Evicts, o.in.Restart, o.unfinished = seen.Evicts, seen.Input, seen.Unfinished
	for _, w := range seen.Warnings {
		o.causes = append(o.causes, record.Cause(w))
	}
	return err
}

// evict carries out d, an Evict decided on o's inputs (see
// eviction.Restarter.Carry), and returns when to come back.
func (r *Reconciler) evict(ctx context.Context, o *observed, d rollout.Decision) (ctrl.Result, error) {
	after, err := r.Evicting.Carry(ctx, r.Client, restartReport{r, o}, o.key, o.in.Restart, d.Restart)
	return ctrl.Result{RequeueAfter: after}, err
}

// restartReport writes and records what a restart of o's workload did
// (see eviction.Reporter).
type restartReport struct {
	r *Reconciler
	o *observed
}

// Progress writes p as the eviction.ProgressAnnotation, or removes it when
// p is nil, guarded by the resourceVersion read, as one of nudge's own
// writes (memo.History): a reconcile that reads the workload from a cache
// behind it waits for it.
func (rep restartReport) Progress(ctx context.Context, p *eviction.Progress) error {
	obj := rep.o.obj
	c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{eviction.ProgressAnnotation: nil}}
	if p != nil {
		c.Annotations[eviction.ProgressAnnotation] = ptr.To(p.String())
	}
	return rep.r.written(client.ObjectKeyFromObject(obj), obj, false, func() error { return rep.r.apply(ctx, obj, c) })
}

func (rep restartReport) Warn(ctx context.Context, w eviction.Warning) {
	rep.o.acted = append(rep.o.acted, record.Cause(w))
}
