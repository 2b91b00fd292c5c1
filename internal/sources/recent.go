package sources

import (
	"iter"
	"time"
)

// Young is how long nudge remembers what it saw happen: a source's content
// change (Changes) and a workload's creation (memo.Births), the
// time it gives itself to see a workload's creation and its first
// reconcile (rule 3 in docs/design.md). It is far above what rule 1 needs
// of a change's time (two quiet gaps, two seconds at the most).
const Young = time.Minute

// Aging is an entry of Recent: Old reports whether it may be dropped at
// now.
type Aging interface {
	Old(now time.Time) bool
}

// Recent is a map of what nudge saw recently. An entry that is Old is not
// returned, and is dropped by the sweep that Put makes at most every
// Young/4, so the memory holds the entries written in the last Young (and
// those their Old keeps), not every object ever seen. The zero value is
// ready to use; it is not safe for concurrent use: its owner locks.
type Recent[K comparable, V Aging] struct {
	m     map[K]V
	swept time.Time
}

// Get returns the entry of k, ok false when there is none or it is Old at
// now.
func (r *Recent[K, V]) Get(k K, now time.Time) (v V, ok bool) {
	v, ok = r.m[k]
	if !ok || v.Old(now) {
		var zero V
		return zero, false
	}
	return v, true
}

// Put sets the entry of k to v, after dropping every entry Old at now when
// the last sweep was more than Young/4 ago.
func (r *Recent[K, V]) Put(k K, v V, now time.Time) {
	if r.m == nil {
		r.m = map[K]V{}
	}
	if now.Sub(r.swept) > Young/4 {
		for k, e := range r.m {
			if e.Old(now) {
				delete(r.m, k)
			}
		}
		r.swept = now
	}
	r.m[k] = v
}

// All returns every entry not Old at now.
func (r *Recent[K, V]) All(now time.Time) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, v := range r.m {
			if !v.Old(now) && !yield(k, v) {
				return
			}
		}
	}
}

// Delete drops the entry of k.
func (r *Recent[K, V]) Delete(k K) {
	delete(r.m, k)
}

// Len returns how many entries are held, Old or not.
func (r *Recent[K, V]) Len() int {
	return len(r.m)
}
