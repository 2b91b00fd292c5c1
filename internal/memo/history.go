package memo

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// History remembers, per workload, the resourceVersion nudge's last write
// was made against, so that a reconcile on a cache that has not seen that
// write yet does not act twice; and, until the watch delivers it, the
// resourceVersion that write made, so that its event is not reconciled again
// (see OwnWrites).
//
// It is all nudge keeps in memory of its own writes, and it need not
// survive a restart: a new process starts from a cache synced with the API.
// What must survive is in the workloads: the applied state and its seal, and
// in their managedFields who wrote them (see ownership.WrittenBackBy), which tells a
// state a GitOps tool wrote back from one nudge wrote. It holds one
// resourceVersion per workload nudge wrote since it started, but for first
// sights, and one per write whose event has not come yet. The zero value is
// ready to use; it is safe for concurrent use.
type History struct {
	mu   sync.Mutex
	over map[types.NamespacedName]string
	made map[types.NamespacedName]madeVersion
	// inFlight holds, per write in flight (see Write), the versions of
	// the update events held back until its answer tells which is its own.
	inFlight map[types.NamespacedName][]string
}

// madeVersion is the resourceVersion one of nudge's writes made; awaited
// says that a reconcile found the cache behind it and left the workload to
// the write's event (see Stale).
type madeVersion struct {
	version string
	awaited bool
}

// Wrote records that nudge wrote the workload key, patching its version
// over, which made version made ("" when not known, or when nudge's own
// events are reconciled). A first sight of a workload not yet known is not
// recorded, so that the start over many workloads stays lean: a second
// reconcile on the stale version would be a first sight again, whose patch,
// guarded by that version, the API server refuses. (Without Write, a
// made version whose event came before Wrote stays until the workload's
// next event: one
// entry per workload at most, where first sights would leave one per
// workload of the cluster.)
//
// It reports whether an update event held back during Write
// was not the write's own: the caller must reconcile key again.
func (h *History) Wrote(key types.NamespacedName, over, made string, firstSight bool) (again bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := false // the write's own event came before its answer
	for _, v := range h.inFlight[key] {
		if made != "" && v == made {
			seen = true
		} else {
			again = true
		}
	}
	delete(h.inFlight, key)
	if _, known := h.over[key]; firstSight && !known {
		return again
	}
	if made != "" && made != over && !seen {
		if h.made == nil {
			h.made = map[types.NamespacedName]madeVersion{}
		}
		h.made[key] = madeVersion{version: made}
	}
	if h.over == nil {
		h.over = map[types.NamespacedName]string{}
	}
	h.over[key] = over
	return again
}

// Write makes write, nudge's write of the workload key, which returns the
// version it wrote over and the version it made (as Wrote takes them), and
// records it as Wrote does. The watch may deliver the write's event before
// the write's answer names the version it made: an event OwnWrites passed
// then would reconcile the workload once more, to decide nothing (2 of 3
// rollouts of the benchmark's sequential changes, 28 Nov 2026). So while
// write runs, OwnWrites holds back the key's update events, and once it
// returns, the write's own is dropped. Write reports whether another was
// held back (or any, when write failed): the caller must reconcile key
// again. It returns write's error.
func (h *History) Write(key types.NamespacedName, firstSight bool, write func() (over, made string, err error)) (again bool, err error) {
	h.writing(key)
	defer h.unwritten(key) // after a panic in write
	over, made, err := write()
	if err != nil {
		return h.unwritten(key), err
	}
	return h.Wrote(key, over, made, firstSight), nil
}

// writing starts holding back key's update events (see Write).
func (h *History) writing(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight == nil {
		h.inFlight = map[types.NamespacedName][]string{}
	}
	h.inFlight[key] = nil
}

// unwritten ends a write of key that failed (see Write), and reports
// whether an update event was held back meanwhile. It does nothing after
// Wrote.
func (h *History) unwritten(key types.NamespacedName) (again bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.inFlight[key]
	delete(h.inFlight, key)
	return ok && len(held) > 0
}

// Stale reports whether version is the one nudge last patched on key: the
// cache has not yet seen nudge's write. Then awaited says whether that
// write's event is still to come, and will be reconciled; when it is not,
// the event passed while the caller read the cache, and the caller must
// requeue the workload itself.
func (h *History) Stale(key types.NamespacedName, version string) (stale, awaited bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	over, ok := h.over[key]
	if !ok || over != version {
		return false, false
	}
	m, ok := h.made[key]
	if ok {
		m.awaited = true
		h.made[key] = m
	}
	return true, ok
}

// OwnWrites is the predicate that drops the watch event of nudge's own
// write of a workload: the version the write made (see Wrote), unless a
// reconcile awaits it (see Stale). Such an event changes nothing nudge
// decides on: the workload is as nudge wrote it, and a change of its
// sources since comes by the sources' own events. Any event of the workload
// ends what is remembered of the write. While a write of the workload is in
// flight (see Write), its update events are held back for Wrote.
func (h *History) OwnWrites() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectNew == nil {
				return true
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			key := client.ObjectKeyFromObject(e.ObjectNew)
			if held, ok := h.inFlight[key]; ok {
				h.inFlight[key] = append(held, e.ObjectNew.GetResourceVersion())
				return false
			}
			m, ok := h.made[key]
			if !ok {
				return true
			}
			delete(h.made, key)
			return m.awaited || m.version != e.ObjectNew.GetResourceVersion()
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if e.Object != nil {
				h.mu.Lock()
				defer h.mu.Unlock()
				delete(h.made, client.ObjectKeyFromObject(e.Object))
			}
			return true
		},
	}
}

// Forget drops what is known of key (deleted, or no longer opted in).
func (h *History) Forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.over, key)
	delete(h.made, key)
	delete(h.inFlight, key)
}
