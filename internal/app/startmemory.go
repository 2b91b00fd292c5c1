package app

import (
	"context"
	"runtime/debug"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/record"
)

// releaseStartMemory ends the start (endStart: the garbage collector's
// start-up headroom, see widenStartHeadroom) and returns to the operating
// system the memory the start allocated and freed (decoding the initial
// lists, the first reconcile and baseline of every workload) that the Go
// runtime would otherwise keep, and the pages of the binary the start
// touched (releaseBinaryPages): once no workload has been written and no
// reconcile has ended for 2 s since the caches synced at synced (the first
// reconciles are done), or 10 minutes after it at the latest (a stream of
// changes that never pauses). It costs one garbage collection and, later, a
// minor page fault for each page of code run again; at the default scale of
// `make bench` the first lowers the idle RSS by about 2.5 MiB, the second by
// about 20 MiB (docs/performance.md). See afterStart for a start that
// pauses before it is done.
func releaseStartMemory(ctx context.Context, wrote, reconciled *record.Lull, synced time.Time, endStart func()) {
	log := ctrl.LoggerFrom(ctx)
	afterStart(ctx, wrote, reconciled, synced, startQuiet, startResumed, synced.Add(10*time.Minute), endStart, func() {
		debug.FreeOSMemory()
		if n, err := releaseBinaryPages(); err != nil {
			log.V(1).Info("Could not release the binary's pages", "error", err)
		} else {
			log.V(1).Info("Released the binary's pages", "bytes", n)
		}
	})
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
// stalled for 2 s, and the single replica released its pages while
// thousands of reconciles were still to come, which mapped 18.5 MiB of the
// binary back, against 6–8 MiB for a shard that released after its start
// (docs/performance.md, "Shards by namespace hash").
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
