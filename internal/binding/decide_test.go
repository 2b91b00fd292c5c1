package binding_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/binding"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const key = "spec.s3.accesskey"
	matching := binding.Field{Path: key, Matches: true, Owned: true}
	overwritten := binding.Field{Path: key, Owner: "argocd-controller"}
	current := binding.Input{Generation: 2, ObservedGeneration: 2, Applied: "v1.k S=a", Desired: "v1.k S=a", Now: now}
	with := func(in binding.Input, mutate func(*binding.Input)) binding.Input {
		mutate(&in)
		return in
	}
	tests := map[string]struct {
		in   binding.Input
		want binding.Decision
	}{
		"a target that already holds its values at first sight is left alone": {
			in: binding.Input{Generation: 1, Desired: "v1.k S=a", Now: now,
				Fields: []binding.Field{{Path: key, Matches: true, Owner: "helm"}}},
			want: binding.Decision{Action: binding.None, Reset: true},
		},
		"a target without the values at first sight is applied": {
			in:   binding.Input{Generation: 1, Desired: "v1.k S=a", Now: now, Fields: []binding.Field{{Path: key}}},
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"nothing changed and nudge still owns its field: nothing is written (a restart)": {
			in:   with(current, func(in *binding.Input) { in.Fields = []binding.Field{{Path: key, Owned: true}} }),
			want: binding.Decision{Action: binding.None},
		},
		"a source change is applied once": {
			in: with(current, func(in *binding.Input) {
				in.Desired = "v1.k S=b"
				in.Fields = []binding.Field{{Path: key, Owned: true}}
			}),
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"a binding edit re-applies": {
			in: with(current, func(in *binding.Input) {
				in.Generation = 3
				in.Fields = []binding.Field{{Path: "spec.s3.region", Owner: "helm"}}
			}),
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"another manager's first overwrite is corrected and counted": {
			in:   with(current, func(in *binding.Input) { in.Fields = []binding.Field{overwritten} }),
			want: binding.Decision{Action: binding.Apply, Overwritten: []string{key}},
		},
		"the third overwrite within ten minutes stops the binding": {
			in: with(current, func(in *binding.Input) {
				in.Fields = []binding.Field{overwritten}
				in.Overwrites = map[string][]time.Time{key: {ago(9 * time.Minute), ago(time.Minute)}}
			}),
			want: binding.Decision{Action: binding.Stop, Overwritten: []string{key}, Field: key, Manager: "argocd-controller"},
		},
		"overwrites older than ten minutes do not count": {
			in: with(current, func(in *binding.Input) {
				in.Fields = []binding.Field{overwritten}
				in.Overwrites = map[string][]time.Time{key: {ago(11 * time.Minute), ago(time.Minute)}}
			}),
			want: binding.Decision{Action: binding.Apply, Overwritten: []string{key}},
		},
		"overwrites of another field do not count for this one": {
			in: with(current, func(in *binding.Input) {
				in.Fields = []binding.Field{overwritten}
				in.Overwrites = map[string][]time.Time{"spec.other": {ago(2 * time.Minute), ago(time.Minute)}}
			}),
			want: binding.Decision{Action: binding.Apply, Overwritten: []string{key}},
		},
		"a stopped binding stays stopped while nothing changes": {
			in: with(current, func(in *binding.Input) {
				in.Stopped = true
				in.Fields = []binding.Field{overwritten}
			}),
			want: binding.Decision{Action: binding.Stop},
		},
		"a stopped binding resumes when a source changes": {
			in: with(current, func(in *binding.Input) {
				in.Stopped, in.Desired = true, "v1.k S=b"
				in.Fields = []binding.Field{overwritten}
				in.Overwrites = map[string][]time.Time{key: {ago(2 * time.Minute), ago(time.Minute), now}}
			}),
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"a stopped binding resumes when it is edited": {
			in: with(current, func(in *binding.Input) {
				in.Stopped, in.Generation = true, 3
				in.Fields = []binding.Field{overwritten}
			}),
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"an optional value gone is removed if nudge owned it": {
			in: with(current, func(in *binding.Input) {
				in.Desired = "v1.k S=-"
				in.Fields = []binding.Field{{Path: key, Skipped: true, Owned: true}}
			}),
			want: binding.Decision{Action: binding.Apply, Reset: true},
		},
		"an optional value gone that nudge does not own writes nothing": {
			in: with(current, func(in *binding.Input) {
				in.Fields = []binding.Field{matching, {Path: "spec.b", Skipped: true, Owner: "helm"}}
			}),
			want: binding.Decision{Action: binding.None},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(binding.Decide(tc.in)).To(Equal(tc.want))
		})
	}
}
