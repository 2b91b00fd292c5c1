package record

import (
	"context"
	"sync/atomic"
	"time"
)

// Lull tells when the reconcilers last wrote a workload, so that writes of
// lower priority (Events) can wait for a pause in rollouts instead of
// competing with them for the API server. The zero value is ready to use;
// it is safe for concurrent use.
type Lull struct {
	last   atomic.Int64                  // Unix nanoseconds of the last workload write; 0: none
	count  atomic.Int64                  // workload writes so far
	writes atomic.Pointer[chan struct{}] // see Writes; nil until then
}

// Wrote records a workload write at now. It never blocks.
func (l *Lull) Wrote(now time.Time) {
	l.last.Store(now.UnixNano())
	l.count.Add(1)
	if c := l.writes.Load(); c != nil {
		select {
		case *c <- struct{}{}:
		default: // a signal waits already
		}
	}
}

// Count returns how many writes have been recorded.
func (l *Lull) Count() int64 { return l.count.Load() }

// Writes returns a channel that receives after a workload write; writes
// made while a signal waits to be received add none (its buffer holds one).
// Every call returns the same channel.
func (l *Lull) Writes() <-chan struct{} {
	c := make(chan struct{}, 1)
	l.writes.CompareAndSwap(nil, &c)
	return *l.writes.Load()
}

// Remaining returns how long from now until no workload will have been
// written for quiet, if none is written meanwhile; 0 when none has been for
// quiet already.
func (l *Lull) Remaining(now time.Time, quiet time.Duration) time.Duration {
	return max(time.Unix(0, l.last.Load()).Add(quiet).Sub(now), 0)
}

// Wait returns once no workload has been written for quiet, once deadline
// has passed, or once ctx is done, whichever comes first.
func (l *Lull) Wait(ctx context.Context, quiet time.Duration, deadline time.Time) {
	l.WaitSince(ctx, time.Time{}, quiet, deadline)
}

// WaitSince is Wait with the quiet counted from since when no workload was
// written after it: it waits at least until since+quiet (or the deadline).
func (l *Lull) WaitSince(ctx context.Context, since time.Time, quiet time.Duration, deadline time.Time) {
	for {
		last := time.Unix(0, l.last.Load())
		if last.Before(since) {
			last = since
		}
		wait := time.Until(last.Add(quiet))
		if until := time.Until(deadline); until < wait {
			wait = until
		}
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
