package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/rollout"
)

// history remembers, per workload, the resourceVersion nudge's last write
// was made against, so that a reconcile on a cache that has not seen that
// write yet does not act twice; and, until the watch delivers it, the
// resourceVersion that write made, so that its event is not reconciled again
// (see ownWrites).
//
// It is all nudge keeps in memory of its own writes, and it need not
// survive a restart: a new process starts from a cache synced with the API.
// What must survive is in the workloads: the applied state and its seal, and
// in their managedFields who wrote them (see WrittenBackBy), which tells a
// state a GitOps tool wrote back from one nudge wrote. It holds one
// resourceVersion per workload nudge wrote since it started, but for first
// sights, and one per write whose event has not come yet. The zero value is
// ready to use; it is safe for concurrent use.
type history struct {
	mu   sync.Mutex
	over map[types.NamespacedName]string
	made map[types.NamespacedName]madeVersion
}

// madeVersion is the resourceVersion one of nudge's writes made; awaited
// says that a reconcile found the cache behind it and left the workload to
// the write's event (see stale).
type madeVersion struct {
	version string
	awaited bool
}

// wrote records that nudge wrote the workload key, patching its version
// over, which made version made ("" when not known, or when nudge's own
// events are reconciled). A first sight of a workload not yet known is not
// recorded, so that the start over many workloads stays lean: a second
// reconcile on the stale version would be a first sight again, whose patch,
// guarded by that version, the API server refuses. (A made version whose
// event came before wrote stays until the workload's next event: one
// entry per workload at most, where first sights would leave one per
// workload of the cluster.)
func (h *history) wrote(key types.NamespacedName, over, made string, firstSight bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, known := h.over[key]; firstSight && !known {
		return
	}
	if made != "" && made != over {
		if h.made == nil {
			h.made = map[types.NamespacedName]madeVersion{}
		}
		h.made[key] = madeVersion{version: made}
	}
	if h.over == nil {
		h.over = map[types.NamespacedName]string{}
	}
	h.over[key] = over
}

// stale reports whether version is the one nudge last patched on key: the
// cache has not yet seen nudge's write. Then awaited says whether that
// write's event is still to come, and will be reconciled; when it is not,
// the event passed while the caller read the cache, and the caller must
// requeue the workload itself.
func (h *history) stale(key types.NamespacedName, version string) (stale, awaited bool) {
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

// ownWrites is the predicate that drops the watch event of nudge's own
// write of a workload: the version the write made (see wrote), unless a
// reconcile awaits it (see stale). Such an event changes nothing nudge
// decides on: the workload is as nudge wrote it, and a change of its
// sources since comes by the sources' own events. Any event of the workload
// ends what is remembered of the write.
func (h *history) ownWrites() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectNew == nil {
				return true
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			key := client.ObjectKeyFromObject(e.ObjectNew)
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

// forget drops what is known of key (deleted, or no longer opted in).
func (h *history) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.over, key)
	delete(h.made, key)
}

// changes remembers, per workload, when nudge first saw a change of one of
// its sources that has not been rolled yet, for nudge_rollout_latency_seconds.
// An entry lives from the source's event until the workload is rolled, or
// reconciled to a decision that rolls nothing (a baseline, no change), or
// deleted; waiting for the window, a slot, a missing source or a halt keeps
// it. The zero value is ready to use; it is safe for concurrent use.
type changes struct {
	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// saw records a change of a source of key seen at now, unless an earlier
// one is not rolled yet.
func (c *changes) saw(key types.NamespacedName, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.at[key]; ok {
		return
	}
	if c.at == nil {
		c.at = map[types.NamespacedName]time.Time{}
	}
	c.at[key] = now
}

// take returns and forgets when the change key was rolled for was seen.
func (c *changes) take(key types.NamespacedName) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[key]
	delete(c.at, key)
	return at, ok
}

// settle forgets the change of key when decision a rolls nothing for it,
// now or later.
func (c *changes) settle(key types.NamespacedName, a rollout.Action) {
	switch a {
	case rollout.Roll, rollout.Wait, rollout.Pending, rollout.Hold, rollout.Halted:
		return
	}
	c.forget(key)
}

// forget drops what is known of key.
func (c *changes) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at, key)
}
