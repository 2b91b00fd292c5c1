package gctune

import (
	"context"
	"runtime/debug"
	"time"

	"nudge.dev/nudge/internal/record"
)

// Start widens the garbage collector's headroom for nudge's start (see
// widenStartHeadroom) and returns the start's end: call Starting.Synced
// once the caches have synced, or Starting.End when the start fails.
func Start() *Starting {
	return &Starting{end: widenStartHeadroom()}
}

// Starting is a start in progress, from Start.
type Starting struct {
	end func()
}

// End gives the start's headroom back; it may be called more than once,
// and after Synced.
func (s *Starting) End() { s.end() }

// Synced ends the start once the caches have synced (true ok) and its
// first work is done, returning the start's memory to the operating
// system then (see releaseStartMemory), and then widens the headroom
// while workloads are written (see widenForWrites) until ctx is done:
// wrote is told of every workload write, reconciled of the end of every
// reconcile. With ok false, it only ends the start. It blocks until ctx is
// done, or returns at once with ok false.
func (s *Starting) Synced(ctx context.Context, ok bool, wrote, reconciled *record.Lull) {
	if ok {
		releaseStartMemory(ctx, wrote, reconciled, time.Now(), s.end)
	}
	s.end()
	if ok {
		widenForWrites(ctx, wrote)
	}
}

// releaseStartMemory ends the start (endStart: the garbage collector's
// start-up headroom, see widenStartHeadroom) and returns to the operating
// system the memory the start allocated and freed (decoding the initial
// lists, the first reconcile and baseline of every workload) that the Go
// runtime would otherwise keep: once no workload has been written and no
// reconcile has ended for 2 s since the caches synced at synced (the first
// reconciles are done), or 10 minutes after it at the latest (a stream of
// changes that never pauses). It costs one garbage collection; at 100,000
// sources and 25,000 workloads it lowers the idle working set from 194 to
// 152 MiB (docs/performance.md). See afterStart for a start that pauses
// before it is done.
func releaseStartMemory(ctx context.Context, wrote, reconciled *record.Lull, synced time.Time, endStart func()) {
	afterStart(ctx, wrote, reconciled, synced, startQuiet, startResumed, synced.Add(10*time.Minute), endStart, debug.FreeOSMemory)
}

// startQuiet is the pause in workload writes and reconciles taken for the
// end of the start; startResumed the reconciles after a release that show
// the start was not over.
const (
	startQuiet   = 2 * time.Second
	startResumed = 100
)

// afterStart calls end, then release, once neither lull has seen anything
// for quiet since synced, or at deadline; nothing once ctx is done. It
// returns then, and goes on in a goroutine of its own until deadline or ctx
// is done (releaseAgain): a start may pause for quiet before it is done.
// Over 25,000 workloads on a busy API server the first-sight writes
// stalled for 2 s, and the single replica released its memory while
// thousands of reconciles were still to come (docs/performance.md,
// "At scale").
func afterStart(ctx context.Context, wrote, reconciled *record.Lull, synced time.Time, quiet time.Duration, resumed int64, deadline time.Time, end, release func()) {
	pause(ctx, wrote, reconciled, synced, quiet, deadline)
	end()
	if ctx.Err() != nil {
		return
	}
	ended, mark := reconciled.Writes(), reconciled.Count()
	release()
	go releaseAgain(ctx, wrote, reconciled, ended, mark, quiet, resumed, deadline, release)
}

// releaseAgain calls release at the next pause (see pause) whenever resumed
// reconciles or more have ended since the last release began (the first at
// mark, as reconciled.Count; ended is reconciled.Writes), until deadline or
// ctx is done: a rollout now and then, or a stream that never pauses, calls
// it no more.
func releaseAgain(ctx context.Context, wrote, reconciled *record.Lull, ended <-chan struct{}, mark int64, quiet time.Duration, resumed int64, deadline time.Time, release func()) {
	for {
		for reconciled.Count()-mark < resumed {
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-ended:
			}
			t.Stop()
			if ctx.Err() != nil || !time.Now().Before(deadline) {
				return
			}
		}
		pause(ctx, wrote, reconciled, time.Now(), quiet, deadline)
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return
		}
		mark = reconciled.Count()
		release()
	}
}

// pause returns once neither lull has seen anything for quiet since since,
// at deadline, or once ctx is done.
func pause(ctx context.Context, wrote, reconciled *record.Lull, since time.Time, quiet time.Duration, deadline time.Time) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		wrote.WaitSince(ctx, since, quiet, deadline)
		reconciled.WaitSince(ctx, since, quiet, deadline)
		if now := time.Now(); wrote.Remaining(now, quiet) == 0 && reconciled.Remaining(now, quiet) == 0 {
			return
		}
	}
}
