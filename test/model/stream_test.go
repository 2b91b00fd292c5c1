package model_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/model"
)

// The window streams are what TestWindowStreams needs them to be, over 200
// seeds: the same plan for the same seed, steps in order, the restarts
// asked for, each a moment after an update; many updates within the quiet
// gap of the previous update of the same ConfigMap, some a window or more
// after it.
func TestPlanStream(t *testing.T) {
	g := NewWithT(t)
	const quiet, window, length = 400 * time.Millisecond, 2 * time.Second, 6 * time.Second
	var updates, repeats, far int
	for seed := range uint64(200) {
		plan := model.PlanStream(seed, length, quiet, window, 2)
		g.Expect(model.PlanStream(seed, length, quiet, window, 2)).To(Equal(plan), "seed %d drew another plan", seed)
		last := map[string]time.Duration{}
		var restarts int
		var prev, lastUpdate time.Duration
		for _, s := range plan {
			g.Expect(s.At).To(BeNumerically(">=", prev), "seed %d: steps out of order", seed)
			prev = s.At
			if s.Restart() {
				restarts++
				g.Expect(s.At-lastUpdate).To(BeNumerically("<", quiet), "seed %d: a restart %s after the last update", seed, s.At-lastUpdate)
				continue
			}
			lastUpdate = s.At
			if at, ok := last[s.Source]; ok {
				gap := s.At - at
				switch {
				case gap < quiet:
					repeats++
				case gap >= window:
					far++
				}
			}
			last[s.Source] = s.At
			updates++
		}
		g.Expect(restarts).To(Equal(2), "seed %d", seed)
		g.Expect(prev).To(BeNumerically("<", length+window+2*quiet), "seed %d: the stream ends at %s", seed, prev)
	}
	t.Logf("%d updates, %d within the quiet gap of the same ConfigMap's previous, %d a window or more after it", updates, repeats, far)
	g.Expect(repeats).To(BeNumerically(">", updates/3), "repeats within the quiet gap")
	g.Expect(far).To(BeNumerically(">", updates/20), "updates far apart")
}
