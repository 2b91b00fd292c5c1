package metrics

import (
	"context"
	"sync"
)

// running is the set of members (one per nudge the process runs: one, but
// for tests) a collector registered once per process reports on. The zero
// value is ready to use; it is safe for concurrent use.
type running[T comparable] struct {
	mu  sync.Mutex
	set map[T]bool
}

// add puts m in the set until ctx, the life of its nudge, is done.
func (r *running[T]) add(ctx context.Context, m T) {
	r.mu.Lock()
	if r.set == nil {
		r.set = map[T]bool{}
	}
	r.set[m] = true
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		delete(r.set, m)
		r.mu.Unlock()
	})
}

// each calls f for every member, holding the set.
func (r *running[T]) each(f func(T)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for m := range r.set {
		f(m)
	}
}
