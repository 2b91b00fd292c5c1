package controller

import (
	"hash/maphash"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// replacedStates is how many applied states nudge remembers having replaced
// on one workload.
const replacedStates = 4

// history remembers, per workload, the applied states nudge's own writes
// replaced and the resourceVersion its last write was made against. With it
// the reconciler tells a restored state from a current one, and a cache that
// has not seen nudge's last write yet from a workload someone else changed.
//
// A GitOps tool that keeps a manifest exported from the live object
// (`kubectl get -o yaml`, nudge's annotations and seal label included)
// restores an old, validly sealed state every time nudge writes a new one;
// acting on it would roll the workload on every sync, forever. A state nudge
// replaced before is therefore never acted on (see rollout.Input.Restored).
//
// It lives in memory, holds 8 bytes per remembered state, and only for
// workloads whose state nudge replaced since it started: a restart forgets
// it, so a restored state then rolls the workload once. The zero value is ready to
// use; it is safe for concurrent use.
type history struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[types.NamespacedName]*writes
}

type writes struct {
	over     string   // resourceVersion of the object nudge last patched
	replaced []uint64 // hashes of applied states nudge replaced, oldest first
}

func (h *history) hash(applied string) uint64 { return maphash.String(h.seed, applied) }

// wrote records that nudge replaced applied state old (empty when none or
// not nudge's) with new on the version over of the workload key. A first
// sight (old empty) of a workload not yet known is not recorded: there is
// nothing to restore, and the start over many workloads stays lean.
func (h *history) wrote(key types.NamespacedName, over, old, new string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.m[key]
	if w == nil && old == "" {
		return
	}
	if h.m == nil {
		h.m = map[types.NamespacedName]*writes{}
		h.seed = maphash.MakeSeed()
	}
	if w == nil {
		w = &writes{}
		h.m[key] = w
	}
	w.over = over
	n := h.hash(new)
	w.replaced = slices.DeleteFunc(w.replaced, func(x uint64) bool { return x == n })
	if old != "" && old != new {
		o := h.hash(old)
		w.replaced = append(slices.DeleteFunc(w.replaced, func(x uint64) bool { return x == o }), o)
		if len(w.replaced) > replacedStates {
			w.replaced = slices.Delete(w.replaced, 0, len(w.replaced)-replacedStates)
		}
	}
}

// stale reports whether version is the one nudge last patched on key: the
// cache has not yet seen nudge's write.
func (h *history) stale(key types.NamespacedName, version string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.m[key]
	return w != nil && w.over == version
}

// restored reports whether applied is a state nudge replaced on key.
func (h *history) restored(key types.NamespacedName, applied string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.m[key]
	return w != nil && applied != "" && slices.Contains(w.replaced, h.hash(applied))
}

// forget drops what is known of key (deleted, or no longer opted in).
func (h *history) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}
