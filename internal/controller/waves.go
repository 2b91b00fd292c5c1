package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
)

// The reconciler's side of waves and halts (--max-concurrent-rollouts):
// fleet.Waves decides, the reconciler writes and tells.

func (r *Reconciler) waveKey(n types.NamespacedName) fleet.Key {
	return fleet.Key{Kind: r.Kind.Name(), NamespacedName: n}
}

// afterWave does, after act, what decision d taken with waves on still asks
// (see fleet.Waves.After), and says so when it halted obj.
func (r *Reconciler) afterWave(ctx context.Context, obj client.Object, d rollout.Decision, hold fleet.Hold, over string, result ctrl.Result) (ctrl.Result, error) {
	after, halted, err := r.Waves.After(ctx, r.waveKey(client.ObjectKeyFromObject(obj)), obj, d, hold, over, r.now(), r.apply)
	if err != nil {
		return r.retry(ctx, err)
	}
	if halted {
		ctrl.LoggerFrom(ctx).Info("Halted rollout of "+r.Kind.Name(), "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "halt", hold.Value)
		if r.Notify != nil {
			r.Notify(Rolled{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Sources: d.Changed, Time: r.now(),
				Halted: "the rollout of " + hold.After + " for the same change failed"})
		}
	}
	if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
		result.RequeueAfter = after
	}
	return result, nil
}

// expectWave ranks the workloads a source change is about to reconcile (see
// fleet.Waves.Expect).
func (r *Reconciler) expectWave(ctx context.Context, reqs []reconcile.Request) {
	if r.Waves == nil {
		return
	}
	for _, req := range reqs {
		obj := r.Kind.New()
		if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
			continue
		}
		priority, _ := fleet.PriorityOf(obj)
		r.Waves.Expect(r.waveKey(req.NamespacedName), priority)
	}
}

// contentDigest returns sources.ContentDigest of src as the cache holds it
// now, "" for kinds of source other than ConfigMaps and Secrets.
func (r *Reconciler) contentDigest(ctx context.Context, src refs.Source) (string, error) {
	if src.Kind != refs.ConfigMap && src.Kind != refs.Secret {
		return "", nil
	}
	obj, err := r.resolver().Get(ctx, src)
	switch {
	case apierrors.IsNotFound(err):
		return sources.ContentDigest(r.Key, src, nil), nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", src, err)
	}
	return sources.ContentDigest(r.Key, src, obj), nil
}
