package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/rollout"
)

// history remembers, per workload, the resourceVersion nudge's last write
// was made against, so that a reconcile on a cache that has not seen that
// write yet does not act twice.
//
// It is all nudge keeps in memory of its own writes, and it need not
// survive a restart: a new process starts from a cache synced with the API.
// What must survive is in the workloads: the applied state and its seal, and
// in their managedFields who wrote them (see WrittenBackBy), which tells a
// state a GitOps tool wrote back from one nudge wrote. It holds one
// resourceVersion per workload nudge wrote since it started, but for first
// sights. The zero value is ready to use; it is safe for concurrent use.
type history struct {
	mu   sync.Mutex
	over map[types.NamespacedName]string
}

// wrote records that nudge wrote the workload key, patching its version
// over. A first sight of a workload not yet known is not recorded, so that
// the start over many workloads stays lean: a second reconcile on the stale
// version would be a first sight again, whose patch, guarded by that
// version, the API server refuses.
func (h *history) wrote(key types.NamespacedName, over string, firstSight bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, known := h.over[key]; firstSight && !known {
		return
	}
	if h.over == nil {
		h.over = map[types.NamespacedName]string{}
	}
	h.over[key] = over
}

// stale reports whether version is the one nudge last patched on key: the
// cache has not yet seen nudge's write.
func (h *history) stale(key types.NamespacedName, version string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	over, ok := h.over[key]
	return ok && over == version
}

// forget drops what is known of key (deleted, or no longer opted in).
func (h *history) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.over, key)
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
