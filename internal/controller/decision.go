package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// verdict is the one decision a reconcile acts on: rollout.Decide's, as the
// gate after it (see decide) revised it.
type verdict struct {
	rollout.Decision
	// halt is, for Halted, the nudge.dev/halted the waves write (see
	// fleet.Waves.After).
	halt fleet.Hold
	// causes are the Warnings the workload deserves now: those observed,
	// the waves', and the decision's own (see decisionCause).
	causes []record.Cause
	// contested, when not zero, says not to act: another key's state taken
	// over is contested (see ownership.Takeovers.Contested); the reconcile
	// comes back after it.
	contested time.Duration
	// behind says not to act: the cache is behind the API server where the
	// rollout may not trust it (see behind); the reconcile comes back after
	// behindWait.
	behind bool
}

// decide takes the one decision a reconcile acts on, for the workload o:
// rollout.Decide's on o's inputs; then, with --max-concurrent-rollouts,
// the fleet's waves, which may halt it or keep it for a slot
// (fleet.Waves.Decide, which may revise the inputs too); the Warning the
// decision deserves; a takeover contest with another key's nudge
// (contested); and a cache behind the API server where a rollout may not
// trust it (behind). It
// returns a content's read error and the API server's.
func (r *Reconciler) decide(ctx context.Context, o *observed) (verdict, error) {
	v := verdict{Decision: rollout.Decide(o.in), causes: o.causes}
	if r.Waves != nil {
		d, more, halt, err := r.Waves.Decide(ctx, r.waveKey(o.key), o.obj, &o.in, v.Decision, r.contentDigest)
		if err != nil {
			return verdict{}, err
		}
		v.Decision, v.halt, v.causes = d, halt, append(v.causes, more...)
	}
	if c, ok := decisionCause(v.Decision, ownership.WrittenBackBy(o.obj.GetManagedFields())); ok {
		v.causes = append(v.causes, c)
	}
	if c, ok := producerCause(v.Decision, o.lateProducers, r.ProducerTimeout, o.key.Namespace); ok {
		v.causes = append(v.causes, c)
	}
	if wait, c := r.memory.Taken.Contested(o.key, o.in, v.Decision, r.Key.ID()); wait > 0 {
		v.contested, v.causes = wait, append(v.causes, c)
		return v, nil
	}
	behind, err := r.behind(ctx, o.key, o.in, v.Decision)
	v.behind = behind
	return v, err
}

// decisionCause returns the Warning a decision deserves, if any; by is the
// manager that wrote a restored state back.
func decisionCause(d rollout.Decision, by string) (record.Cause, bool) {
	switch d.Action {
	case rollout.Hold:
		return record.Cause{Reason: record.ReasonRolloutHeld, Note: fmt.Sprintf(
			"Held the rollout for %s until the missing required source(s) exist", refs.Names(d.Changed))}, true
	case rollout.Restored:
		return record.Cause{Reason: record.ReasonStateRestored, Note: fmt.Sprintf(
			"%s and the label %s were set back by %s to a state nudge had replaced (a manifest exported from the live object "+
				"and applied again?); nudge does not roll for it, so that it and the tool that wrote it do not take turns. "+
				"Remove nudge.dev/ keys from the manifest", workload.AppliedAnnotation, workload.SealLabel, by)}, true
	}
	return record.Cause{}, false
}

// producerCause returns the Warning ProducerNotReady of a rollout d, of a
// workload in namespace, for a Secret whose producer was still not ready
// after timeout (late). It names the producer and quotes its reason only for
// a Secret of the workload's own namespace: of another namespace's (a
// cross-namespace reference), whose producer's condition the workload's
// owner may not read, it says only that the producer was not ready.
func producerCause(d rollout.Decision, late []resolve.Resolved, timeout time.Duration, namespace string) (record.Cause, bool) {
	if d.Action != rollout.Roll {
		return record.Cause{}, false
	}
	var named []string
	for _, c := range late {
		switch {
		case !slices.Contains(d.Changed, c.Source):
		case c.Namespace != namespace:
			named = append(named, fmt.Sprintf("%s (its producer: not ready)", refs.Names([]refs.Source{c.Source})))
		default:
			named = append(named, fmt.Sprintf("%s (%s: %s)", refs.Names([]refs.Source{c.Source}), c.Producer.Producer, c.Producer.Reason))
		}
	}
	if len(named) == 0 {
		return record.Cause{}, false
	}
	return record.Cause{Reason: record.ReasonProducerNotReady, Note: fmt.Sprintf(
		"Rolled for %s though its producer was not ready after %s (--producer-ready-timeout)", strings.Join(named, ", "), timeout)}, true
}

// waveKey is the fleet's key of the workload n of r's kind.
func (r *Reconciler) waveKey(n types.NamespacedName) fleet.Key {
	return fleet.Key{Kind: r.Kind.Name(), NamespacedName: n}
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

// behind reports whether d, a rollout of the workload key decided on inputs
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
