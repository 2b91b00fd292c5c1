package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/rollout"
)

// behind, act's guard of a rollout, reports whether d, a rollout of the
// workload key decided on inputs in, must wait for the cache (see
// lag.Checker.Rollout): d asks for a recheck, or the workload's last
// rollout is another nudge's within a minute.
func (r *Reconciler) behind(ctx context.Context, key types.NamespacedName, in rollout.Input, d rollout.Decision) (bool, error) {
	if d.Action != rollout.Roll || d.FirstSight {
		return r.lag.Rollout(ctx, key, nil, false, false, in.LastRollout, in.Now)
	}
	foreign := r.memory.Rollouts.Foreign(key, in.LastRollout, in.Now)
	return r.lag.Rollout(ctx, key, d.Changed, d.Recheck, foreign, in.LastRollout, in.Now)
}
