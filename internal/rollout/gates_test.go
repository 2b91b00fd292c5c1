package rollout_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// nightly is a maintenance window open from 02:00 to 03:00 UTC each day.
type nightly struct{}

func (nightly) Open(t time.Time) bool { return t.UTC().Hour() == 2 }

func (n nightly) Next(t time.Time) time.Time {
	if n.Open(t) {
		return t
	}
	next := time.Date(t.Year(), t.Month(), t.Day(), 2, 0, 0, 0, time.UTC)
	if !next.After(t) {
		next = next.AddDate(0, 0, 1)
	}
	return next
}

func TestGates(t *testing.T) {
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	base := entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}}
	changedCM := state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}})
	ago := func(ds ...time.Duration) []time.Time {
		var out []time.Time
		for _, d := range ds {
			out = append(out, noon.Add(-d))
		}
		return out
	}
	roll := func(edit func(*rollout.Input)) rollout.Input {
		in := rollout.Input{Applied: applied("k", base), Sealed: true, Namespace: "shop", Desired: changedCM, Now: noon}
		edit(&in)
		return in
	}
	tests := map[string]struct {
		in         rollout.Input
		want       rollout.Action
		wantAfter  time.Duration
		wantRolled []time.Time
	}{
		"a change outside the maintenance window is deferred until it opens": {
			in:        roll(func(in *rollout.Input) { in.Maintenance = nightly{} }),
			want:      rollout.Deferred,
			wantAfter: 14 * time.Hour,
		},
		"a change inside the maintenance window rolls at once": {
			in: roll(func(in *rollout.Input) {
				in.Maintenance, in.Now = nightly{}, noon.Add(14*time.Hour+30*time.Minute)
			}),
			want: rollout.Roll,
		},
		"a change of an urgent source rolls outside the window": {
			in:   roll(func(in *rollout.Input) { in.Maintenance, in.Urgent = nightly{}, []refs.Source{cm} }),
			want: rollout.Roll,
		},
		"an urgent source that did not change opens no window": {
			in:        roll(func(in *rollout.Input) { in.Maintenance, in.Urgent = nightly{}, []refs.Source{secret} }),
			want:      rollout.Deferred,
			wantAfter: 14 * time.Hour,
		},
		"a rollout within the budget rolls and is recorded": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 3, ago(50*time.Minute, 10*time.Minute)
			}),
			want:       rollout.Roll,
			wantRolled: ago(50*time.Minute, 10*time.Minute, 0),
		},
		"two rollouts in the hour brake a budget of two": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 2, ago(30*time.Minute, 50*time.Minute, 2*time.Hour)
			}),
			want:      rollout.Braked,
			wantAfter: 10 * time.Minute,
		},
		"rollouts older than the hour do not count": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 2, ago(61*time.Minute, 70*time.Minute, 5*time.Minute)
			}),
			want:       rollout.Roll,
			wantRolled: ago(5*time.Minute, 0),
		},
		"past the budget the rollout is braked until the oldest leaves the hour": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 3, ago(time.Minute, 40*time.Minute, 20*time.Minute)
			}),
			want:      rollout.Braked,
			wantAfter: 20 * time.Minute,
		},
		"a rollout recorded a second ahead of the clock counts": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 2, []time.Time{noon.Add(-30 * time.Minute), noon.Add(time.Second)}
			}),
			want:      rollout.Braked,
			wantAfter: 30 * time.Minute,
		},
		"a time more than an hour ahead is no rollout's": {
			in: roll(func(in *rollout.Input) {
				in.Budget, in.Rolled = 1, []time.Time{noon.Add(2 * time.Hour)}
			}),
			want:       rollout.Roll,
			wantRolled: ago(0),
		},
		"no budget brakes nothing and records nothing": {
			in: roll(func(in *rollout.Input) {
				in.Rolled = ago(time.Minute, 2*time.Minute, 3*time.Minute)
			}),
			want: rollout.Roll,
		},
		"a changed Secret whose producer is not ready is gated until the wait times out": {
			in: roll(func(in *rollout.Input) {
				in.Desired = state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "dddd"}})
				in.Unready, in.UnreadyUntil = []refs.Source{secret}, noon.Add(90*time.Second)
			}),
			want:      rollout.Gated,
			wantAfter: 90 * time.Second,
		},
		"a producer not ready of a source that did not change gates nothing": {
			in: roll(func(in *rollout.Input) {
				in.Unready, in.UnreadyUntil = []refs.Source{secret}, noon.Add(90*time.Second)
			}),
			want: rollout.Roll,
		},
		"the window defers before the brake counts": {
			in: roll(func(in *rollout.Input) {
				in.Maintenance, in.Budget, in.Rolled = nightly{}, 1, ago(time.Minute)
			}),
			want:      rollout.Deferred,
			wantAfter: 14 * time.Hour,
		},
		"a burst still waits for its quiet gap first": {
			in: roll(func(in *rollout.Input) {
				in.Maintenance, in.LastRollout, in.Window = nightly{}, noon.Add(-time.Second), 5*time.Second
				in.Changes = ago(100*time.Millisecond, 200*time.Millisecond)
			}),
			want:      rollout.Wait,
			wantAfter: 900 * time.Millisecond,
		},
		"a deferred rollout with waves on takes no slot": {
			in: roll(func(in *rollout.Input) {
				in.Maintenance, in.Waves, in.Slot = nightly{}, true, false
			}),
			want:      rollout.Deferred,
			wantAfter: 14 * time.Hour,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := rollout.Decide(tc.in)
			g.Expect(d.Action).To(Equal(tc.want), "action")
			g.Expect(d.RequeueAfter).To(Equal(tc.wantAfter), "requeue after")
			g.Expect(d.Rolled).To(Equal(tc.wantRolled), "rollout times recorded")
			if tc.want != rollout.None {
				g.Expect(d.Changed).NotTo(BeEmpty(), "changed")
			}
		})
	}
}
