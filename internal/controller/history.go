package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
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
