package sources

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// Young is how long Updates remembers a content update, and how long a
// workload counts as new (see controller's births): the time nudge gives
// itself to see a workload's creation and its first reconcile.
const Young = time.Minute

// Updates remembers, per source, which keys of its content (data and
// binaryData, see ContentChanged) nudge's informer delivered updates of,
// with the resourceVersion each key last changed at, for Young after the
// source's last content update. A key added or removed is a key changed. A
// creation is not an update: a source created after its workload is what
// the workload's pods start with. A deletion forgets the source. It
// answers whether what a reference reads of a source changed after a
// workload was created (After), which first sight needs (rule 3 in
// docs/design.md). It holds only the sources updated in the last minute.
// The zero value is ready to use; it is safe for concurrent use.
type Updates struct {
	// Clock tells the time; clock.RealClock when nil.
	Clock clock.PassiveClock

	mu    sync.Mutex
	last  map[refs.Source]update
	swept time.Time
}

// update is what is remembered of one source: the resourceVersion each
// changed key last changed at, and when nudge saw the last change.
type update struct {
	keys map[string]string
	at   time.Time
}

// Recorder returns a predicate that records every content update of a
// ConfigMap or Secret into u and forgets a deleted one, and lets every
// event through. Placed before the predicates and handler that enqueue a
// source's workloads, it records an update before any reconcile it causes
// runs.
func (u *Updates) Recorder() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil || !ContentChanged(e.ObjectOld, e.ObjectNew) {
				return true
			}
			if keys := changedKeys(Digests(e.ObjectOld), Digests(e.ObjectNew)); len(keys) > 0 {
				if src, ok := SourceOf(e.ObjectNew); ok {
					u.saw(src, keys, e.ObjectNew.GetResourceVersion())
				}
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if src, ok := SourceOf(e.Object); ok {
				u.forget(src)
			}
			return true
		},
	}
}

// changedKeys returns the keys whose digest differs between old and new,
// or that only one of them has.
func changedKeys(old, new fingerprint.Digests) []string {
	var out []string
	for k, v := range new {
		if w, ok := old[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// saw records that keys of src changed, at version.
func (u *Updates) saw(src refs.Source, keys []string, version string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	if u.last == nil {
		u.last = map[refs.Source]update{}
	}
	if now.Sub(u.swept) > Young/4 {
		for s, e := range u.last {
			if now.Sub(e.at) > Young {
				delete(u.last, s)
			}
		}
		u.swept = now
	}
	e, ok := u.last[src]
	if !ok || now.Sub(e.at) > Young {
		e = update{keys: map[string]string{}}
	}
	for _, k := range keys {
		e.keys[k] = version
	}
	e.at = now
	u.last[src] = e
}

func (u *Updates) forget(src refs.Source) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.last, src)
}

// After reports whether nudge saw, in the last minute, a change of what
// ref reads of its source (any key for a whole reference) to a
// resourceVersion greater than version (a workload's, taken at its
// creation). Resource versions are compared as integers
// (resourceversion.CompareResourceVersion, promised since Kubernetes 1.35
// for objects of one resource): across resources, as here, the comparison
// holds when both are stored in one etcd, the default, whose revision is
// every object's resourceVersion. A malformed version answers false.
func (u *Updates) After(ref refs.Reference, version string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.last[ref.Source]
	if !ok || u.now().Sub(e.at) > Young {
		return false
	}
	for k, v := range e.keys {
		if !ref.Whole() && !slices.Contains(ref.Keys, k) {
			continue
		}
		if c, err := resourceversion.CompareResourceVersion(v, version); err == nil && c > 0 {
			return true
		}
	}
	return false
}

func (u *Updates) now() time.Time {
	if u.Clock == nil {
		return time.Now()
	}
	return u.Clock.Now()
}
