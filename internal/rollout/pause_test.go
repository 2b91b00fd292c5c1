package rollout_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

func TestPause(t *testing.T) {
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	base := entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}}
	both := entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "dddd"}}
	changedCM := entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}
	// changed is a workload whose ConfigMap changed, edited.
	changed := func(edit func(*rollout.Input)) rollout.Input {
		in := rollout.Input{Applied: applied("k", base), Sealed: true, Namespace: "shop", Desired: state("k", changedCM), Now: noon}
		edit(&in)
		return in
	}
	tests := map[string]struct {
		in          rollout.Input
		want        rollout.Action
		wantChanged []refs.Source
		wantWrite   entries
		wantUnhalt  bool
	}{
		"a change of a paused workload is paused, and nothing is written": {
			in:          changed(func(in *rollout.Input) { in.PausedBy = rollout.PausedWorkload }),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a change under a paused Namespace is paused": {
			in:          changed(func(in *rollout.Input) { in.PausedBy = rollout.PausedNamespace }),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"the pause lifted, the change rolls once with the content as it is then": {
			in:          changed(func(in *rollout.Input) { in.Desired = state("k", both) }),
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm, secret},
			wantWrite:   both,
		},
		"a change of a paused source alone is paused": {
			in:          changed(func(in *rollout.Input) { in.PausedSources = []refs.Source{cm} }),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a change of another source than the paused one rolls": {
			in:          changed(func(in *rollout.Input) { in.PausedSources = []refs.Source{secret} }),
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM,
		},
		"a paused source's change rides along another's rollout, and is recorded as rolled": {
			in: changed(func(in *rollout.Input) {
				in.Desired, in.PausedSources = state("k", both), []refs.Source{secret}
			}),
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm, secret},
			wantWrite:   both,
		},
		"a paused workload with no change does nothing": {
			in: changed(func(in *rollout.Input) {
				in.Desired, in.PausedBy = state("k", base), rollout.PausedWorkload
			}),
			want: rollout.None,
		},
		"a pause records a baseline: references that changed roll nothing anyway": {
			in: changed(func(in *rollout.Input) {
				in.Desired, in.PausedBy = state("k", entries{cm: {Digest: "aaaa"}}), rollout.PausedWorkload
			}),
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}},
		},
		"first sight of a paused workload records its baseline": {
			in: changed(func(in *rollout.Input) {
				in.Applied, in.PausedBy = "", rollout.PausedWorkload
			}),
			want:      rollout.Baseline,
			wantWrite: changedCM,
		},
		"first sight of a young source while paused is paused: the youth is kept until the lift": {
			in: changed(func(in *rollout.Input) {
				in.Applied, in.Young, in.PausedBy = "", []refs.Source{cm}, rollout.PausedWorkload
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a burst that would wait is paused": {
			in: changed(func(in *rollout.Input) {
				in.LastRollout, in.Window, in.PausedBy = noon.Add(-time.Second), 5*time.Second, rollout.PausedWorkload
				in.Changes = []time.Time{noon.Add(-100 * time.Millisecond), noon.Add(-200 * time.Millisecond)}
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a missing required source still holds, and warns, while paused": {
			in: changed(func(in *rollout.Input) {
				in.Desired = state("k", entries{cm: {Digest: "cccc"}})
				in.Missing, in.PausedBy = []refs.Reference{{Source: secret, Keys: []string{"p"}}}, rollout.PausedWorkload
			}),
			want:        rollout.Hold,
			wantChanged: []refs.Source{cm},
		},
		"a pause holds before the maintenance window, the storm brake and the slots": {
			in: changed(func(in *rollout.Input) {
				in.Maintenance, in.Budget, in.Rolled = nightly{}, 1, []time.Time{noon.Add(-time.Minute)}
				in.Waves, in.Slot, in.PausedBy = true, false, rollout.PausedNamespace
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"an urgent source does not lift a pause": {
			in: changed(func(in *rollout.Input) {
				in.Urgent, in.PausedSources = []refs.Source{cm}, []refs.Source{cm}
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a pause holds a halted change, and the halt stays": {
			in: changed(func(in *rollout.Input) {
				in.Halts, in.PausedBy = []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true}}, rollout.PausedWorkload
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
		},
		"a halt that has ended is removed while paused": {
			in: changed(func(in *rollout.Input) {
				in.Halts, in.PausedBy = []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h2", Marked: true}}, rollout.PausedWorkload
			}),
			want:        rollout.Paused,
			wantChanged: []refs.Source{cm},
			wantUnhalt:  true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := rollout.Decide(tc.in)
			g.Expect(d.Action).To(Equal(tc.want), "action")
			g.Expect(d.Changed).To(Equal(tc.wantChanged), "changed")
			g.Expect(d.Unhalt).To(Equal(tc.wantUnhalt), "unhalt")
			g.Expect(d.RequeueAfter).To(BeZero(), "requeue after: a pause ends by its lift's event, no timer")
			if tc.wantWrite == nil {
				g.Expect(d.Write.Entries).To(BeNil(), "write")
				return
			}
			g.Expect(d.Write.Entries).To(Equal(tc.wantWrite), "write")
		})
	}
}
