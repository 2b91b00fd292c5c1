package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
)

// startHeadroom is the least the heap may grow, in bytes, between two
// garbage collections while nudge starts. At GOGC=20 (nudge's, see
// cmd/nudge) a start that decodes the initial lists with a live heap of
// 15 MiB collected every 3 MiB allocated: 93 collections, about a fifth of
// its CPU, before its first reconcile (docs/performance.md, under steady
// load). More headroom collects less often but leaves the objects the
// caches keep spread over more of the heap, which the release at the end of
// the start (releaseStartMemory) cannot return: at the default scale of
// `make bench`, 8 MiB kept the idle RSS where it was (49.5 MiB), 16 MiB
// raised it to 52.4 and 32 MiB to 57.5. A live heap over 40 MiB, where
// GOGC=20 leaves more room than this, is collected as before.
const startHeadroom = 8 << 20

// minLiveHeap is the least live heap startPercent assumes: the runtime's
// heap minimum, 4 MiB at GOGC=100, grows with the GC percent (at 3200 %,
// 128 MiB), so a percent computed for a smaller heap would leave more than
// the headroom before the first collections.
const minLiveHeap = 4 << 20

// startGC is the process's setting of the garbage collector while nudges
// start or write (see widenHeadroom). It is the process's, not one nudge's:
// tests run several nudges in one process, and the setting lasts while any
// of them has the headroom widened.
var startGC struct {
	sync.Mutex
	widened []uint64 // the headroom each widening asks for
	base    int      // GC percent before the first widening, restored after the last
	armed   bool     // a collection will call tuneStartGC
}

// widenStartHeadroom makes the garbage collector leave at least
// startHeadroom bytes of growth after each collection while nudge starts
// (see widenHeadroom).
func widenStartHeadroom() (restore func()) { return widenHeadroom(startHeadroom) }

// widenHeadroom makes the garbage collector leave at least headroom bytes
// of growth after each collection, or what the GC percent in force (nudge's
// 20 or $GOGC) leaves when that is more; nothing changes with GC off. While
// several widen it, the largest counts. It lasts until restore is called;
// restore may be called more than once.
func widenHeadroom(headroom uint64) (restore func()) {
	startGC.Lock()
	defer startGC.Unlock()
	if len(startGC.widened) == 0 {
		startGC.base = debug.SetGCPercent(100)
		debug.SetGCPercent(startGC.base)
	}
	startGC.widened = append(startGC.widened, headroom)
	if startGC.base >= 0 {
		setStartPercent()
		if !startGC.armed {
			startGC.armed = true
			armStartGC()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			startGC.Lock()
			defer startGC.Unlock()
			i := slices.Index(startGC.widened, headroom)
			startGC.widened = slices.Delete(startGC.widened, i, i+1)
			switch {
			case len(startGC.widened) == 0:
				debug.SetGCPercent(startGC.base)
			case startGC.base >= 0:
				setStartPercent()
			}
		})
	}
}

// sentinel is an object no one keeps: its finalizer runs after each
// garbage collection. It holds a pointer so that the allocator never packs
// it with other small objects (whose finalizers would then run together).
type sentinel struct{ _ *byte }

// armStartGC makes the next garbage collection call tuneStartGC.
func armStartGC() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { tuneStartGC() })
}

// tuneStartGC sets the GC percent from the live heap the last collection
// measured, and arms the next collection, while the headroom is widened
// with GC on.
func tuneStartGC() {
	startGC.Lock()
	defer startGC.Unlock()
	if len(startGC.widened) == 0 || startGC.base < 0 {
		startGC.armed = false
		return
	}
	setStartPercent()
	armStartGC()
}

// setStartPercent sets the GC percent for the live heap now and the largest
// headroom asked for; startGC is locked and the headroom widened.
func setStartPercent() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	var bytes uint64
	if live[0].Value.Kind() == metrics.KindUint64 {
		bytes = live[0].Value.Uint64()
	}
	debug.SetGCPercent(startPercent(startGC.base, bytes, slices.Max(startGC.widened)))
}

// startPercent returns the GC percent that lets a live heap of live bytes
// grow by at least headroom bytes before the next collection, and never
// less than base: max(base, ⌈100 × headroom / live⌉), live taken as at
// least minLiveHeap (so at most 100 × headroom / 4 MiB: 200 % for the
// start's 8 MiB, 400 % for the writes' 16 MiB).
func startPercent(base int, live, headroom uint64) int {
	live = max(live, minLiveHeap)
	return max(base, int((100*headroom+live-1)/live))
}
