package app

import (
	"runtime/debug"
	"testing"
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
