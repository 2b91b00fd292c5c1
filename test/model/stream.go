package model

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// StreamSources returns the ConfigMaps of every window stream.
func StreamSources() []string { return []string{"cm-a", "cm-b", "cm-c"} }

// StreamWorkloads returns the Deployments of every window stream, each with
// the ConfigMaps it reads (whole): one for each ConfigMap, and one that
// reads two.
func StreamWorkloads() map[string][]string {
	return map[string][]string{
		"w-a":  {"cm-a"},
		"w-b":  {"cm-b"},
		"w-c":  {"cm-c"},
		"w-ab": {"cm-a", "cm-b"},
	}
}

// StreamStep is one step of a window stream, At after the stream's start:
// an update of Source to its next version, or, when Source is "", nudge
// killed (or stopped) and started again at once.
type StreamStep struct {
	At     time.Duration
	Source string
}

// Restart reports whether the step kills and restarts nudge.
func (s StreamStep) Restart() bool { return s.Source == "" }

// PlanStream returns the steps of the window stream of seed, ordered by At:
// updates for about length, each after a gap drawn from a mixture, with
// quiet and window nudge's quiet gap and rollout window:
//   - 45 %: the ConfigMap updated last, again within quiet (a repeat the
//     window folds into one rollout);
//   - 25 %: any ConfigMap within quiet;
//   - 20 %: any ConfigMap between quiet and 2.5 quiet (within a second, past
//     the quiet gap);
//   - 10 %: any ConfigMap between half a window and a window plus quiet
//     (far apart: the window may have ended).
//
// restarts restarts are placed each after a random update, less than quiet
// after it, so that nudge dies in the middle of a burst, a wait or a
// rollout's write, without the stream settling first.
func PlanStream(seed uint64, length, quiet, window time.Duration, restarts int) []StreamStep {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	sources := StreamSources()
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	var steps []StreamStep
	var at time.Duration
	last := sources[r.IntN(len(sources))]
	for at < length {
		src := sources[r.IntN(len(sources))]
		switch n := r.IntN(100); {
		case n < 45:
			src = last
			at += between(0, quiet)
		case n < 70:
			at += between(0, quiet)
		case n < 90:
			at += between(quiet, quiet*5/2)
		default:
			at += between(window/2, window+quiet)
		}
		steps = append(steps, StreamStep{At: at, Source: src})
		last = src
	}
	updates := len(steps)
	for range restarts {
		after := steps[r.IntN(updates)].At
		steps = append(steps, StreamStep{At: after + between(0, quiet)})
	}
	slices.SortStableFunc(steps, func(a, b StreamStep) int { return cmp.Compare(a.At, b.At) })
	return steps
}
