package gctune

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"nudge.dev/nudge/internal/record"
)

func TestStartPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name           string
		base           int
		live, headroom uint64
		want           int
	}{
		{"a small heap gets the headroom", 20, 16 * mib, 32 * mib, 200},
		{"the percent rounds up", 20, 12 * mib, 32 * mib, 267},
		{"before the first collection the live heap counts as the runtime's 4 MiB minimum", 20, 0, 32 * mib, 800},
		{"a heap below the minimum counts as the minimum", 20, 1 * mib, 32 * mib, 800},
		{"a heap where the base leaves more room keeps the base", 20, 200 * mib, 32 * mib, 20},
		{"at the crossing, the base", 20, 160 * mib, 32 * mib, 20},
		{"a higher $GOGC is kept", 300, 16 * mib, 32 * mib, 300},
	} {
		if got := startPercent(c.base, c.live, c.headroom); got != c.want {
			t.Errorf("%s: startPercent(%d, %d, %d) = %d, want %d", c.name, c.base, c.live, c.headroom, got, c.want)
		}
	}
}

// gcPercent returns the GC percent in force.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestStartHeadroom: the GC percent is widened while any nudge of the
// process starts, restored to what it was once the last one has started
// (a second restore changes nothing), and left alone with GC off. Not
// parallel: the GC percent is the process's.
func TestStartHeadroom(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	first, second := widenStartHeadroom(), widenStartHeadroom()
	if p := gcPercent(); p <= 20 {
		t.Fatalf("GC percent %d while starting, want above 20 (a test's heap is far below 160 MiB)", p)
	}
	first()
	first()
	if p := gcPercent(); p <= 20 {
		t.Errorf("GC percent %d while the second nudge starts, want above 20", p)
	}
	second()
	if p := gcPercent(); p != 20 {
		t.Errorf("GC percent %d once started, want 20 back", p)
	}
	second()
	if p := gcPercent(); p != 20 {
		t.Errorf("GC percent %d after a second restore, want 20", p)
	}

	debug.SetGCPercent(-1)
	end := widenStartHeadroom()
	if p := gcPercent(); p != -1 {
		t.Errorf("GC percent %d while starting with GC off, want -1 (off)", p)
	}
	end()
	if p := gcPercent(); p != -1 {
		t.Errorf("GC percent %d once started with GC off, want -1 (off)", p)
	}
}

// TestLargestHeadroomCounts: while several widen the headroom the largest
// sets the GC percent, and once it is given back the others' does. Not
// parallel: the GC percent is the process's.
func TestLargestHeadroomCounts(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	small := widenHeadroom(8 << 20)
	defer small()
	atSmall := gcPercent()
	large := widenHeadroom(64 << 20)
	atLarge := gcPercent()
	if atLarge <= atSmall {
		t.Errorf("GC percent %d with 64 MiB of headroom held beside 8 MiB, want above 8 MiB's %d", atLarge, atSmall)
	}
	large()
	if p := gcPercent(); p >= atLarge || p <= 20 {
		t.Errorf("GC percent %d once 64 MiB is given back, want 8 MiB's (%d then), below %d and above 20", p, atSmall, atLarge)
	}
	small()
	if p := gcPercent(); p != 20 {
		t.Errorf("GC percent %d once all is given back, want 20", p)
	}
}

// TestWriteHeadroom: a workload write widens the GC percent, and a pause of
// writeQuiet restores it. Not parallel: the GC percent is the process's.
func TestWriteHeadroom(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	defer func() {
		stop()
		<-done
	}()
	var lull record.Lull
	writes := lull.Writes()
	go func() {
		defer close(done)
		widenForWrites(ctx, &lull)
	}()
	waitPercent := func(what string, ok func(int) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(gcPercent()) {
			if time.Now().After(deadline) {
				t.Fatalf("GC percent %d 10 s on, want it %s", gcPercent(), what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(writes) != 0 || gcPercent() != 20 {
		t.Fatalf("GC percent %d before any write, want 20", gcPercent())
	}
	lull.Wrote(time.Now())
	waitPercent("widened after a write", func(p int) bool { return p > 20 })
	wrote := time.Now()
	lull.Wrote(wrote)
	waitPercent("20 again once the writes pause", func(p int) bool { return p == 20 })
	if since := time.Since(wrote); since < writeQuiet {
		t.Errorf("GC percent restored %v after the last write, before writeQuiet (%v)", since, writeQuiet)
	}
	lull.Wrote(time.Now())
	waitPercent("widened again by the next write", func(p int) bool { return p > 20 })
}

// The start's memory is released at its first pause, and again at the next
// pause when the start went on after the release (resumed reconciles or
// more); fewer since the last release, over several pauses, release nothing
// more. afterStart itself returns after the first release.
func TestReleaseAgainWhenTheStartWentOn(t *testing.T) {
	const quiet, resumed = 50 * time.Millisecond, 20
	var wrote, reconciled record.Lull
	ended, released := make(chan struct{}), make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		afterStart(ctx, &wrote, &reconciled, time.Now(), quiet, resumed, time.Now().Add(time.Minute),
			func() { close(ended) }, func() { released <- struct{}{} })
	}()
	// reconcile ends n reconciles, one every millisecond.
	reconcile := func(n int) {
		for range n {
			reconciled.Wrote(time.Now())
			time.Sleep(time.Millisecond)
		}
	}
	await := func(what string) {
		t.Helper()
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatalf("no release %s within 10 s", what)
		}
	}
	reconcile(30)
	await("at the first pause")
	select {
	case <-ended:
	default:
		t.Fatal("the release came before the start's end")
	}
	select {
	case <-done: // the widening for writes starts then (Run)
	case <-time.After(10 * time.Second):
		t.Fatal("afterStart did not return within 10 s of the first release")
	}
	reconcile(resumed + 5)
	await("after the start went on")
	// Pauses after fewer reconciles than resumed in all: each sleep is long
	// enough for a release to come, were one due.
	reconcile(resumed / 2)
	time.Sleep(4 * quiet)
	reconcile(resumed/2 - 1)
	time.Sleep(4 * quiet)
	select {
	case <-released:
		t.Fatalf("released again after %d reconciles, fewer than %d", resumed-1, resumed)
	default:
	}
	cancel()
}
