package memo

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
)

// ClockSkew bounds how far the clock of another nudge (whose
// nudge.dev/last-rollout stamps are its own clock's) may be ahead of this
// one's: the nodes of a cluster keep time by NTP, within milliseconds.
const ClockSkew = 2 * time.Second

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

// CaughtUp remembers, by source, the last time this nudge found its cache
// holding the API server's version of the source (controller's behind).
type CaughtUp struct{ stamps[refs.Source] }

// Saw records that the cache held the API server's version of src when it
// was asked at.
func (c *CaughtUp) Saw(src refs.Source, at time.Time) { c.put(src, at) }

// Covers reports whether a rollout stamped rolled by another nudge was
// Decided on a version of src no newer than the cache held when last
// checked: the check came ClockSkew or more after the stamp.
func (c *CaughtUp) Covers(src refs.Source, rolled, now time.Time) bool {
	at, ok := c.get(src, now)
	return ok && !at.Before(rolled.Add(ClockSkew))
}

// Rollouts remembers each rollout this nudge made in the last
// foreignWindow, by workload: its time (nudge.dev/last-rollout, as written)
// and the resourceVersion its write made. The zero value is ready to use;
// it is safe for concurrent use.
type Rollouts struct {
	mu sync.Mutex
	of sources.Recent[types.NamespacedName, rolled]
}

// rolled is one rollout, an entry of sources.Recent.
type rolled struct {
	at      time.Time
	version string
}

// Old reports whether the rollout is older than foreignWindow at now.
func (r rolled) Old(now time.Time) bool { return now.Sub(r.at) > foreignWindow }

// Made records that this nudge rolled key, stamping it at, with a write
// that made version ("" when not known).
func (r *Rollouts) Made(key types.NamespacedName, at time.Time, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.of.Put(key, rolled{at: at, version: version}, at)
}

func (r *Rollouts) get(key types.NamespacedName, now time.Time) (rolled, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.of.Get(key, now)
}

// Foreign reports whether the rollout of key stamped at, seen at now, is
// another nudge's within foreignWindow: not one this nudge made.
func (r *Rollouts) Foreign(key types.NamespacedName, at, now time.Time) bool {
	if at.IsZero() || now.Sub(at) > foreignWindow {
		return false
	}
	own, ok := r.get(key, now)
	return !ok || !own.at.Equal(at)
}

// Before returns the sources of versions (each source's resourceVersion as
// read) whose version is older than the one this nudge's last rollout of
// key made, within foreignWindow of now: they were written before that
// rollout, so its pods, all started after it, read their content. Such a
// source read from a cache that had not seen it yet when the rollout was
// decided is no change to roll again for (rollout.Input.Settled): a change
// committed a moment before the rollout's write would otherwise roll the
// workload twice, the second time with no change since the first. Resource
// versions are compared as integers, which holds across resources stored
// in one etcd (see sources.Changes.After); a malformed one is not before.
func (r *Rollouts) Before(key types.NamespacedName, versions map[refs.Source]string, now time.Time) []refs.Source {
	last, ok := r.get(key, now)
	if !ok || last.version == "" {
		return nil
	}
	var out []refs.Source
	for src, v := range versions {
		if n, err := resourceversion.CompareResourceVersion(v, last.version); err == nil && n < 0 {
			out = append(out, src)
		}
	}
	return out
}
