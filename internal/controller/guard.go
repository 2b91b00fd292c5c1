package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// The guard act runs before it writes a rollout: the one read of the API
// server the decision cannot take from the cache.
// A rollout is decided on the cache, which may be behind the API server by
// a change already written. Two rollouts ask the API server first (see
// docs/design.md, rules 1 and 13): one the changed source's own event did
// not bring (rollout.Decision.Recheck: it trails a burst or catches up a
// change nudge did not see happen), which would write content already
// superseded and then roll again for the newer; and one of a workload
// another nudge rolled within a minute (a shard's successor, a new leader),
// which would write its older state over the other's. For the latter, a
// source once found caught up at T covers every rollout another nudge
// stamped before T less memo.ClockSkew (memo.CaughtUp), so that a fan-out
// after a restart asks once per source, not once per workload.

// behind, act's guard of a rollout, reports whether d, a rollout of the workload key decided on inputs
// in, must wait for the cache (see above): d asks for a recheck, or the
// workload's last rollout is another nudge's within a minute, and the API
// server holds another resourceVersion than the cache of a ConfigMap or
// Secret whose change d rolls. It returns false once the workload has
// waited memo.Lag's limit of times in a row (the cache is then taken as it
// is), and the API server's error.
func (r *Reconciler) behind(ctx context.Context, key types.NamespacedName, in rollout.Input, d rollout.Decision) (bool, error) {
	foreign := d.Action == rollout.Roll && r.memory.Rollouts.Foreign(key, in.LastRollout, in.Now)
	if d.Action != rollout.Roll || d.FirstSight || r.APIReader == nil || !(foreign || d.Recheck) {
		r.memory.Handover.Forget(key)
		return false, nil
	}
	for _, src := range d.Changed {
		var cached client.Object
		switch src.Kind {
		case refs.ConfigMap:
			cached = &corev1.ConfigMap{}
		case refs.Secret:
			cached = &corev1.Secret{}
		default:
			continue
		}
		if !d.Recheck && r.caughtUp.Covers(src, in.LastRollout, in.Now) {
			continue
		}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: src.Name}, cached)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", src, err)
		}
		asked := r.now() // before the list: the answer is of this time or later
		server, err := r.serverVersion(ctx, src)
		if err != nil {
			return false, err
		}
		if server != cached.GetResourceVersion() {
			ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see the API server's version of a source",
				"kind", r.Kind.Name(), "source", src.String(), "cached", cached.GetResourceVersion(), "server", server,
				"recheck", d.Recheck, "lastRollout", in.LastRollout)
			return r.memory.Handover.Wait(key), nil
		}
		r.caughtUp.Saw(src, asked)
	}
	r.memory.Handover.Forget(key)
	return false, nil
}
