package sources

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/refs"
)

// Young is how long Updates remembers a content update, and how long a
// workload counts as new (see controller's births): the time nudge gives
// itself to see a workload's creation and its first reconcile.
const Young = time.Minute

// Updates remembers, per source, the resourceVersion and the time of the
// last update of its content (data or binaryData, see ContentChanged) that
// nudge's informer delivered, for Young. A creation is not an update: a
// source created after its workload is what the workload's pods start
// with. A deletion forgets the source. It answers whether a source's
// content changed after a workload was created (After), which first sight
// needs (rule 3 in docs/design.md). It holds only the sources updated in
// the last minute. The zero value is ready to use; it is safe for
// concurrent use.
type Updates struct {
	// Clock tells the time; clock.RealClock when nil.
	Clock clock.PassiveClock

	mu    sync.Mutex
	last  map[refs.Source]update
	swept time.Time
}

// update is one content update: the source's resourceVersion after it, and
// when nudge saw it.
type update struct {
	version string
	at      time.Time
}

// Recorder returns a predicate that records every content update of a
// ConfigMap or Secret into u and forgets a deleted one, and lets every
// event through. Placed before the predicates and handler that enqueue a
// source's workloads, it records an update before any reconcile it causes
// runs.
func (u *Updates) Recorder() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld != nil && e.ObjectNew != nil && ContentChanged(e.ObjectOld, e.ObjectNew) {
				if src, ok := SourceOf(e.ObjectNew); ok {
					u.saw(src, e.ObjectNew.GetResourceVersion())
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

// saw records a content update of src to version.
func (u *Updates) saw(src refs.Source, version string) {
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
	u.last[src] = update{version: version, at: now}
}

func (u *Updates) forget(src refs.Source) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.last, src)
}

// After reports whether nudge saw, in the last minute, an update of src's
// content to a resourceVersion greater than version (a workload's, taken
// at its creation). Resource versions are compared as integers
// (resourceversion.CompareResourceVersion, promised since Kubernetes 1.35
// for objects of one resource): across resources, as here, the comparison
// holds when both are stored in one etcd, the default, whose revision is
// every object's resourceVersion. A malformed version answers false.
func (u *Updates) After(src refs.Source, version string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.last[src]
	if !ok || u.now().Sub(e.at) > Young {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(e.version, version)
	return err == nil && c > 0
}

func (u *Updates) now() time.Time {
	if u.Clock == nil {
		return time.Now()
	}
	return u.Clock.Now()
}
