package memo

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/refs"
)

// Producers remembers, per workload, since when a Secret it reads has had
// a producer that is not ready (an ExternalSecret, a cert-manager
// Certificate; see producer.Gate): the producer-ready gate waits for it at
// most a timeout from then. It is kept in memory only: after a restart the
// wait starts again. The zero value is ready to use; it is safe for
// concurrent use.
type Producers struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// Wait returns, for the workload key whose Secrets unready have a producer
// not ready at now, the sources the gate still waits for and until when
// (rollout.Input.Unready and UnreadyUntil): all of them until timeout after
// the wait began, none after, when they are returned as timedOut instead.
// With none unready, the wait is over and forgotten.
func (p *Producers) Wait(key types.NamespacedName, unready []refs.Source, now time.Time, timeout time.Duration) (wait []refs.Source, until time.Time, timedOut []refs.Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(unready) == 0 {
		delete(p.since, key)
		return nil, time.Time{}, nil
	}
	if p.since == nil {
		p.since = map[types.NamespacedName]time.Time{}
	}
	since, ok := p.since[key]
	if !ok {
		since = now
		p.since[key] = now
	}
	if until := since.Add(timeout); now.Before(until) {
		return unready, until, nil
	}
	return nil, time.Time{}, unready
}

// Forget drops the wait of key.
func (p *Producers) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, key)
}
