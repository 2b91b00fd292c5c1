package rollout_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/rollout"
)

// TestDecideRestart: the decisions of a workload whose pods are restarted
// through the Eviction API (rollout.Input.Evicts, Input.Restart).
func TestDecideRestart(t *testing.T) {
	base := entries{cm: {Digest: "aaaa"}}
	changed := state("k", entries{cm: {Digest: "cccc"}})
	old := eviction.Pod{Name: "db-0", Created: t0.Add(-time.Hour), Ready: true}
	restart := &eviction.Input{Pods: []eviction.Pod{old}, Progress: eviction.Progress{Since: t0}, Want: 1, Now: t0.Add(time.Minute)}
	tests := map[string]struct {
		in       rollout.Input
		want     rollout.Action
		restarts bool
		step     eviction.Step
		resume   bool // come back for the restart (Decision.Resume)
	}{
		"a change of a workload that evicts rolls and starts a restart": {
			in:   rollout.Input{Applied: applied("k", base), Desired: changed, Evicts: true, Now: t0},
			want: rollout.Roll, restarts: true, resume: true,
		},
		"a change during a restart folds into it: it rolls and starts the restart again": {
			in:   rollout.Input{Applied: applied("k", base), Desired: changed, Evicts: true, Restart: restart, Now: t0.Add(time.Minute)},
			want: rollout.Roll, restarts: true, resume: true,
		},
		"a change of a workload that does not evict rolls alone": {
			in:   rollout.Input{Applied: applied("k", base), Desired: changed, Now: t0},
			want: rollout.Roll,
		},
		"no change and a restart under way: evict, as its plan says": {
			in:   rollout.Input{Applied: applied("k", base), Desired: state("k", base), Evicts: true, Restart: restart, Now: t0.Add(time.Minute)},
			want: rollout.Evict, step: eviction.Evict,
		},
		"a baseline comes before the restart, which goes on after it": {
			in:   rollout.Input{Applied: applied("k", base), Desired: state("k", entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}}), Evicts: true, Restart: restart, Now: t0.Add(time.Minute)},
			want: rollout.Baseline, resume: true,
		},
		"a change waiting for its window comes before the restart": {
			in: rollout.Input{Applied: applied("k", base), Desired: changed, Evicts: true, Restart: restart, LastRollout: t0, Window: time.Hour,
				Changes: []time.Time{t0.Add(59500 * time.Millisecond), t0.Add(59600 * time.Millisecond)}, Now: t0.Add(time.Minute)},
			want: rollout.Wait, resume: true,
		},
		"no change and no restart: nothing to come back for": {
			in:   rollout.Input{Applied: applied("k", base), Desired: state("k", base), Evicts: true, Now: t0},
			want: rollout.None,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.in.Namespace, tc.in.Sealed = "shop", true
			d := rollout.Decide(tc.in)
			g.Expect(d.Action).To(Equal(tc.want), "action")
			g.Expect(d.Restarts).To(Equal(tc.restarts), "restarts")
			g.Expect(d.Restart.Step).To(Equal(tc.step), "the restart's step")
			g.Expect(d.Resume > 0).To(Equal(tc.resume), "come back for the restart (Resume %v)", d.Resume)
		})
	}
}
