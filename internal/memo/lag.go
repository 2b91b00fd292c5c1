package memo

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxWaits bounds the waits in a row per workload (about 5 s at the
// reconciler's 250 ms): past it, the cache is taken as it is.
const maxWaits = 20

// Lag counts, per workload, the reconciles in a row that found the cache
// behind the API server. The zero value is ready to use; it is safe for
// concurrent use.
type Lag struct {
	mu    sync.Mutex
	waits map[types.NamespacedName]int
}

// Wait records one more wait for key and reports whether it may.
func (l *Lag) Wait(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = map[types.NamespacedName]int{}
	}
	if l.waits[key] >= maxWaits {
		return false
	}
	l.waits[key]++
	return true
}

// Forget drops the waits of key; it costs a map lookup when there are none,
// as on every reconcile that misses no source.
func (l *Lag) Forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waits) > 0 {
		delete(l.waits, key)
	}
}
