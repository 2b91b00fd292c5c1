package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"nudge.dev/nudge/internal/record"
)

// writeHeadroom is the least the heap may grow, in bytes, between two
// garbage collections while nudge writes workloads (a fan-out, a burst,
// value bindings applied). At GOGC=20 and a live heap of about 24 MiB (the
// default scale of `make bench`) the collector ran every 5 MiB allocated:
// 31 % of nudge's CPU in a fan-out of 500 rollouts, which on a busy machine
// is wall time (docs/performance.md, against the floor). 16 MiB cut the
// CPU of that fan-out from 0.67 to 0.40 s, as 32 MiB did, but 32 MiB left
// the RSS after it 5 MiB higher (the objects written meanwhile spread over
// more of the heap) where 16 MiB left it as it was. It is widened only while
// writes go on and given back once they pause (writeQuiet), so the idle
// heap keeps GOGC=20's goal; the memory grown into is returned at once
// when it is half the headroom or more (one forced collection, not one per
// lone rollout), otherwise at the scavenger's pace.
const writeHeadroom = 16 << 20

// writeQuiet is the pause in workload writes after which the write headroom
// is given back.
const writeQuiet = time.Second

// writeHeadroomFor bounds one widening for writes: writes that never
// pause release and take it again this often, so that the live heap it is
// computed from is measured afresh.
const writeHeadroomFor = time.Minute

// widenForWrites widens the garbage collector's headroom to writeHeadroom
// (see widenHeadroom) from each workload write lull is told of until the
// writes pause for writeQuiet, until ctx is done. Run it once the start's
// own headroom is given back: the first-sight baselines are writes too, and
// the start keeps its smaller headroom (startHeadroom) for the idle memory's
// sake.
func widenForWrites(ctx context.Context, lull *record.Lull) {
	writes := lull.Writes()
	for {
		select {
		case <-ctx.Done():
			return
		case <-writes:
		}
		end := widenHeadroom(writeHeadroom)
		lull.Wait(ctx, writeQuiet, time.Now().Add(writeHeadroomFor))
		select {
		case <-writes: // the signal of a write waited out above
		default:
		}
		end()
		if ctx.Err() == nil && retainedFree() >= writeHeadroom/2 {
			// The heap grown into the headroom goes back to the operating
			// system now, not at the scavenger's pace. After a write or
			// two it is not worth a forced collection of the whole heap.
			debug.FreeOSMemory()
		}
	}
}

// retainedFree returns the bytes of heap the Go runtime holds free and has
// not returned to the operating system (runtime/metrics'
// /memory/classes/heap/free:bytes); 0 when the runtime does not tell.
func retainedFree() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
