package binding

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/record"
)

// The status write that records an apply waits until the applies pause:
// when no target or workload has been written for statusQuiet (the Lull), or
// statusMaxWait after the first status fell due, every binding whose status
// is due is queued at once (pending.flush); the reconcile that applied asks
// to be called again statusMaxWait later, should the flush not come. Without
// a Lull, it asks to be called again statusDelay later, and writes then. So when one Secret changes for
// many bindings, every target is written first and each binding's status
// once, after the fan-out settles: a status write would double each apply's
// time on the API server's critical path, and its watch event would reach
// nudge's binding watch while the target watch is busiest.
const (
	statusDelay   = time.Millisecond
	statusQuiet   = 100 * time.Millisecond
	statusMaxWait = 5 * time.Second
)

// statusWriters is how many status writes may be in flight at once. The
// flush queues every binding whose status is due at once, and the
// reconciles would otherwise write them with every worker (64 by default):
// 1,000 status writes 64 at a time kept kube-apiserver's CPU so busy on 2
// cores that it could not hand the bindings' events on to nudge's binding
// watch within its budget, and closed the watch (CI, about 1 run in 10 of
// TestFanOutOfAThousandKeepsTheTargetWatch). Eight at a time, the 1,000
// statuses were written 3–4 s after the last target on that machine, as
// with 64: the API server sets the pace, not the number in flight.
const statusWriters = 8

// pending remembers, per binding, the status an apply made due and nudge has
// not written yet: the binding's generation and the applied fingerprint. A
// reconcile before that write reads them instead of the binding's status,
// so nudge's own apply is not taken for a change on nudge's side (which
// would reset the overwrites counted towards Conflict).
type pending struct {
	mu   sync.Mutex
	due  map[string]dueStatus
	wake chan struct{} // a status fell due; buffered (1)
}

func newPending() *pending {
	return &pending{due: map[string]dueStatus{}, wake: make(chan struct{}, 1)}
}

// dueStatus is the status.observedGeneration and status.appliedFingerprint an
// apply made due, the binding, and when it applied.
type dueStatus struct {
	generation  int64
	fingerprint string
	binding     types.NamespacedName
	at          time.Time
}

// set records the status due for binding.
func (p *pending) set(binding string, a dueStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.due[binding] = a
	select {
	case p.wake <- struct{}{}:
	default:
	}
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

// waiting reports whether the status due since at waits at now: lull has
// seen a write within statusQuiet and statusMaxWait has not passed since at.
// Without a lull nothing waits.
func waiting(lull *record.Lull, at, now time.Time) bool {
	return lull != nil && lull.Remaining(now, statusQuiet) > 0 && now.Sub(at) < statusMaxWait
}

// flush queues, each time statuses fall due, every binding whose status is
// due once lull has seen no write for statusQuiet (or statusMaxWait has
// passed), until ctx is done.
func (p *pending) flush(ctx context.Context, lull *record.Lull, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		lull.WaitSince(ctx, time.Now(), statusQuiet, time.Now().Add(statusMaxWait))
		p.mu.Lock()
		for _, d := range p.due {
			q.Add(reconcile.Request{NamespacedName: d.binding})
		}
		p.mu.Unlock()
	}
}
