package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
)

// Two nudges may write one workload at once: a shard and its successor
// while a set of shards changes, a leader and the process it replaced, two
// releases over one namespace. With one key they compute the same state,
// and the second writer's write conflicts and then finds nothing to do; but
// only if their caches agree. When this nudge's cache of a source is behind
// the other's, the other rolls the workload for the source's change first,
// and this one, reading that rollout's write before the change, would
// write its older state back: a rollout back, and the other, seeing it,
// rolls forward again. Three rollouts for one change.
//
// So before it rolls a workload whose last rollout (its
// nudge.dev/last-rollout annotation) another nudge made within
// foreignWindow, a reconcile asks the API server for the resourceVersion
// of each source whose change it would roll, and waits (behindWait, at most
// behindRetries times in a row) while its cache holds another. Its own
// rollouts of the last foreignWindow it remembers (rollouts), so that one
// nudge alone never asks.
//
// Nor does it ask again of a source for each workload: once its cache held
// the API server's version of a source at a time T, the other nudge's
// rollouts stamped before T (less clockSkew) were decided on a version of
// the source no newer than the one cached then, so the cache, which only
// moves forward, is not behind them (caughtUp). After a restart, the
// rollouts of the process before are another nudge's for a minute: without
// this, a fan-out of 500 in that minute asked 500 times and took twice as
// long (make bench, 26 Nov 2026: 3.2 s against 1.4–2.1 s).

// clockSkew bounds how far the clock of another nudge (whose
// nudge.dev/last-rollout stamps are its own clock's) may be ahead of this
// one's: the nodes of a cluster keep time by NTP, within milliseconds.
const clockSkew = 2 * time.Second

// foreignWindow is how recent another nudge's rollout must be for a
// reconcile to check its cache against the API server before rolling
// again: far above the time a watch runs behind the API server.
const foreignWindow = sources.Young

// stamps remembers a time by key for foreignWindow: the rollouts this nudge
// made, and the checks that found its cache caught up. The zero value is
// ready to use; it is safe for concurrent use.
type stamps[K comparable] struct {
	mu sync.Mutex
	at sources.Recent[K, stamp]
}

// stamp is a time, an entry of sources.Recent.
type stamp time.Time

// Old reports whether the stamp is older than foreignWindow at now.
func (t stamp) Old(now time.Time) bool { return now.Sub(time.Time(t)) > foreignWindow }

// put sets the time of k to at.
func (s *stamps[K]) put(k K, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at.Put(k, stamp(at), at)
}

// get returns the time of k, ok false when there is none within
// foreignWindow of now.
func (s *stamps[K]) get(k K, now time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.at.Get(k, now)
	return time.Time(at), ok
}

// caughtUp remembers, by source, the last time this nudge found its cache
// holding the API server's version of the source (behindAnother's check).
type caughtUp struct{ stamps[refs.Source] }

// saw records that the cache held the API server's version of src when it
// was asked at.
func (c *caughtUp) saw(src refs.Source, at time.Time) { c.put(src, at) }

// covers reports whether a rollout stamped rolled by another nudge was
// decided on a version of src no newer than the cache held when last
// checked: the check came clockSkew or more after the stamp.
func (c *caughtUp) covers(src refs.Source, rolled, now time.Time) bool {
	at, ok := c.get(src, now)
	return ok && !at.Before(rolled.Add(clockSkew))
}

// rollouts remembers the time of each rollout this nudge made in the last
// foreignWindow (nudge.dev/last-rollout, as written), by workload.
type rollouts struct{ stamps[types.NamespacedName] }

// made records that this nudge rolled key, stamping it at.
func (r *rollouts) made(key types.NamespacedName, at time.Time) { r.put(key, at) }

// foreign reports whether the rollout of key stamped at, seen at now, is
// another nudge's within foreignWindow: not one this nudge made.
func (r *rollouts) foreign(key types.NamespacedName, at, now time.Time) bool {
	if at.IsZero() || now.Sub(at) > foreignWindow {
		return false
	}
	own, ok := r.get(key, now)
	return !ok || !own.Equal(at)
}

// behindAnother reports whether d, a rollout of the workload key decided on
// inputs in, must wait for the cache: the workload's last rollout is
// another nudge's within foreignWindow, and the API server holds another
// resourceVersion than the cache of a ConfigMap or Secret whose change d
// rolls. It returns false once the workload has waited behindRetries times
// in a row (the cache is then taken as it is), and the API server's error.
func (r *Reconciler) behindAnother(ctx context.Context, key types.NamespacedName, in rollout.Input, d rollout.Decision) (bool, error) {
	if d.Action != rollout.Roll || d.FirstSight || r.APIReader == nil || !r.rollouts.foreign(key, in.LastRollout, in.Now) {
		r.handover.forget(key)
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
		if r.caughtUp.covers(src, in.LastRollout, in.Now) {
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
			ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see a source another nudge rolled from",
				"kind", r.Kind.Name(), "source", src.String(), "cached", cached.GetResourceVersion(), "server", server, "lastRollout", in.LastRollout)
			return r.handover.wait(key), nil
		}
		r.caughtUp.saw(src, asked)
	}
	r.handover.forget(key)
	return false, nil
}
