package memo

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

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

// Rollouts remembers the time of each rollout this nudge made in the last
// foreignWindow (nudge.dev/last-rollout, as written), by workload.
type Rollouts struct{ stamps[types.NamespacedName] }

// Made records that this nudge rolled key, stamping it at.
func (r *Rollouts) Made(key types.NamespacedName, at time.Time) { r.put(key, at) }

// Foreign reports whether the rollout of key stamped at, seen at now, is
// another nudge's within foreignWindow: not one this nudge made.
func (r *Rollouts) Foreign(key types.NamespacedName, at, now time.Time) bool {
	if at.IsZero() || now.Sub(at) > foreignWindow {
		return false
	}
	own, ok := r.get(key, now)
	return !ok || !own.Equal(at)
}
