package binding

import (
	"sync"
	"time"
)

// statusDelay is how long after an apply the status write that records it
// waits: the reconcile is queued again behind the ones already waiting, so
// when one Secret changes for many bindings every target is written before
// any of their statuses (the status write would double each apply's time
// on the API server's critical path).
const statusDelay = time.Millisecond

// pending remembers, per binding, the status an apply made due and nudge has
// not written yet: the binding's generation and the applied fingerprint. A
// reconcile before that write reads them instead of the binding's status,
// so nudge's own apply is not taken for a change on nudge's side (which
// would reset the overwrites counted towards Conflict).
type pending struct {
	mu  sync.Mutex
	due map[string]dueStatus
}

// dueStatus is the status.observedGeneration and status.appliedFingerprint an
// apply made due.
type dueStatus struct {
	generation  int64
	fingerprint string
}

// set records the status due for binding.
func (p *pending) set(binding string, a dueStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.due[binding] = a
}

// get returns the status due for binding, if any.
func (p *pending) get(binding string) (dueStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.due[binding]
	return a, ok
}

// done forgets the status due for binding: written, replaced by another
// outcome, or the binding is gone.
func (p *pending) done(binding string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.due, binding)
}
