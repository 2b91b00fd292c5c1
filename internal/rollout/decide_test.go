package rollout_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

var (
	cm     = refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	secret = refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	other  = refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "extra"}
	t0     = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
)

type entries = map[refs.Source]fingerprint.Entry

func state(keyID string, e entries) fingerprint.State {
	return fingerprint.State{KeyID: keyID, Entries: e}
}

func applied(keyID string, e entries) string { return state(keyID, e).Format("shop") }

func TestDecide(t *testing.T) {
	base := entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}}
	changedCM := state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}})
	tests := map[string]struct {
		in          rollout.Input
		unsealed    bool
		want        rollout.Action
		wantChanged []refs.Source
		wantWrite   entries
		wantFirst   bool
		wantAfter   time.Duration
		wantUnhalt  bool
		wantEntered []refs.Source
		wantHalt    rollout.Halt
	}{
		"first sight records the baseline and never rolls": {
			in:        rollout.Input{Desired: state("k", base)},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"first sight of a workload whose required source was deleted after its creation records what its pods started with": {
			in: rollout.Input{
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
				Gone:    entries{secret: {Shape: "k1", Digest: "bbbb"}},
			},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"a deleted source's content is not recorded over an applied state": {
			in: rollout.Input{
				Applied: applied("k", entries{cm: {Digest: "aaaa"}}),
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
				Gone:    entries{secret: {Shape: "k1", Digest: "bbbb"}},
			},
			want: rollout.None,
		},
		"an applied state of another key is first sight": {
			in:        rollout.Input{Applied: applied("old", entries{cm: {Digest: "zzzz"}}), Desired: state("k", base)},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"an unsealed applied state is first sight": {
			in:        rollout.Input{Applied: applied("k", entries{cm: {Digest: "zzzz"}}), Desired: state("k", base)},
			unsealed:  true,
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"an unreadable applied state is first sight": {
			in:        rollout.Input{Applied: "sha256:abc", Desired: state("k", base)},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"first sight rolls for a source changed after the workload's creation": {
			in:          rollout.Input{Desired: state("k", base), Young: []refs.Source{cm}},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   base,
			wantFirst:   true,
		},
		"a young source rolls though the applied state holds its digest": {
			in:          rollout.Input{Applied: applied("k", base), Desired: state("k", base), Young: []refs.Source{secret}},
			want:        rollout.Roll,
			wantChanged: []refs.Source{secret},
			wantWrite:   base,
		},
		"a young source the workload does not reference rolls nothing": {
			in:        rollout.Input{Desired: state("k", base), Young: []refs.Source{other}},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"a young source on first sight with a required source missing is baselined": {
			in: rollout.Input{
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
				Young:   []refs.Source{cm},
			},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}},
			wantFirst: true,
		},
		"a young source rolls with the changed ones, once": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Young:   []refs.Source{cm, secret},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm, secret},
			wantWrite:   entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}},
		},
		"a young source of a workload rolled since is no change on first sight": {
			in:        rollout.Input{Applied: applied("other", base), Sealed: true, Desired: state("k", base), Young: []refs.Source{cm}, LastRollout: t0, Now: t0.Add(time.Minute)},
			want:      rollout.Baseline,
			wantFirst: true,
			wantWrite: base,
		},
		"a young source waits for a rollout slot": {
			in: rollout.Input{
				Applied: applied("k", base),
				Sealed:  true,
				Desired: state("k", base),
				Young:   []refs.Source{cm},
				Waves:   true,
			},
			want:        rollout.Pending,
			wantChanged: []refs.Source{cm},
		},
		"a young source read another way is baselined without a rollout": {
			in:          rollout.Input{Applied: applied("k", base), Desired: state("k", entries{cm: {Shape: "k2", Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}}), Young: []refs.Source{cm}},
			want:        rollout.Baseline,
			wantWrite:   entries{cm: {Shape: "k2", Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}},
			wantEntered: []refs.Source{cm},
		},
		"a young source entering the references is baselined without a rollout": {
			in:          rollout.Input{Applied: applied("k", entries{secret: {Shape: "k1", Digest: "bbbb"}}), Desired: state("k", base), Young: []refs.Source{cm}},
			want:        rollout.Baseline,
			wantWrite:   base,
			wantEntered: []refs.Source{cm},
		},
		"a settled source's new content is baselined without a rollout": {
			in:        rollout.Input{Applied: applied("k", base), Desired: changedCM, Settled: []refs.Source{cm}},
			want:      rollout.Baseline,
			wantWrite: changedCM.Entries,
		},
		"a settled source rolls nothing but the changed ones roll": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "dddd"}}),
				Settled: []refs.Source{cm},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{secret},
			wantWrite:   entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "dddd"}},
		},
		"a young source is not settled": {
			in:          rollout.Input{Applied: applied("k", base), Desired: changedCM, Young: []refs.Source{cm}, Settled: []refs.Source{cm}},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a young source of a restored state is left alone": {
			in:   rollout.Input{Applied: applied("k", base), Restored: true, Desired: state("k", base), Young: []refs.Source{cm}},
			want: rollout.Restored,
		},
		"the same state does nothing": {
			in:   rollout.Input{Applied: applied("k", base), Desired: state("k", base)},
			want: rollout.None,
		},
		"a changed digest rolls and names the source": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}},
		},
		"an optional source that disappears rolls": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: fingerprint.Absent}, secret: {Shape: "k1", Digest: "bbbb"}}),
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   entries{cm: {Digest: fingerprint.Absent}, secret: {Shape: "k1", Digest: "bbbb"}},
		},
		"a new reference is baselined without a rollout": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}, other: {Digest: "dddd"}}),
			},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "bbbb"}, other: {Digest: "dddd"}},
		},
		"a dropped reference is baselined without a rollout": {
			in:        rollout.Input{Applied: applied("k", base), Desired: state("k", entries{cm: {Digest: "aaaa"}})},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}},
		},
		"reading other keys of a source is baselined without a rollout": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "aaaa"}, secret: {Shape: "k2", Digest: "eeee"}}),
			},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}, secret: {Shape: "k2", Digest: "eeee"}},
		},
		"a missing required source keeps its applied entry and rolls nothing": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
			},
			want: rollout.None,
		},
		"a change held back while a required source is missing": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
			},
			want:        rollout.Hold,
			wantChanged: []refs.Source{cm},
		},
		"a kept source keeps its applied entry and rolls nothing": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Kept:    []refs.Reference{{Source: secret, Keys: []string{"p"}, Optional: true}},
			},
			want: rollout.None,
		},
		"a kept source holds no other change": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}}),
				Kept:    []refs.Reference{{Source: secret, Keys: []string{"p"}, Optional: true}},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}},
		},
		"a kept source never seen is not recorded": {
			in: rollout.Input{
				Applied: applied("k", entries{cm: {Digest: "aaaa"}}),
				Desired: state("k", entries{cm: {Digest: "aaaa"}}),
				Kept:    []refs.Reference{{Source: secret, Optional: true}},
			},
			want: rollout.None,
		},
		"with CreateRolls a kept source is recorded as absent": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     state("k", entries{cm: {Digest: "aaaa"}}),
				Kept:        []refs.Reference{{Source: secret, Optional: true}},
				CreateRolls: true,
			},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}, secret: {Digest: fingerprint.Absent}},
		},
		"with CreateRolls a missing required source is recorded as absent": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     state("k", entries{cm: {Digest: "aaaa"}}),
				Missing:     []refs.Reference{{Source: secret}},
				CreateRolls: true,
			},
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "aaaa"}, secret: {Digest: fingerprint.Absent}},
		},
		"with CreateRolls a returning source rolls even with its old content": {
			in: rollout.Input{
				Applied:     applied("k", entries{cm: {Digest: "aaaa"}, secret: {Digest: fingerprint.Absent}}),
				Desired:     state("k", entries{cm: {Digest: "aaaa"}, secret: {Digest: "bbbb"}}),
				CreateRolls: true,
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{secret},
			wantWrite:   entries{cm: {Digest: "aaaa"}, secret: {Digest: "bbbb"}},
		},
		"a restored state is left alone": {
			in: rollout.Input{
				Applied:  applied("k", base),
				Desired:  state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Restored: true,
			},
			want: rollout.Restored,
		},
		"an unsealed restored state is first sight": {
			in: rollout.Input{
				Applied:  applied("k", base),
				Desired:  state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Restored: true,
			},
			unsealed:  true,
			want:      rollout.Baseline,
			wantWrite: entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}},
			wantFirst: true,
		},
		"a lone change inside the window rolls at once": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(2 * time.Second),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(2 * time.Second), t0.Add(-3 * time.Second)},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a change with nothing remembered rolls at once, as after a restart": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(200 * time.Millisecond),
				Window:      5 * time.Second,
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a single remembered change rolls at once": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(200 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(150 * time.Millisecond)},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a change less than the quiet gap after another is part of a burst and waits for the sources to be quiet": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(250 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(100 * time.Millisecond), t0.Add(200 * time.Millisecond)},
			},
			want:        rollout.Wait,
			wantChanged: []refs.Source{cm},
			wantAfter:   950 * time.Millisecond,
		},
		"a burst that has been quiet for the quiet gap rolls": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(1200 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(100 * time.Millisecond), t0.Add(200 * time.Millisecond)},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"the latest two changes count, in any order and across sources": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(200 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(150 * time.Millisecond), t0.Add(-10 * time.Second), t0.Add(100 * time.Millisecond), t0.Add(-20 * time.Second)},
			},
			want:        rollout.Wait,
			wantChanged: []refs.Source{cm},
			wantAfter:   950 * time.Millisecond,
		},
		"a burst that never goes quiet waits for the window's end at the latest": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(4700 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(4600 * time.Millisecond), t0.Add(4500 * time.Millisecond)},
			},
			want:        rollout.Wait,
			wantChanged: []refs.Source{cm},
			wantAfter:   300 * time.Millisecond,
		},
		"a change of a burst after the window rolls at once": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(5 * time.Second),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(4900 * time.Millisecond), t0.Add(4950 * time.Millisecond)},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a burst with no rollout before rolls at once": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: time.Time{},
				Now:         t0.Add(200 * time.Millisecond),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(100 * time.Millisecond), t0.Add(150 * time.Millisecond)},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a short window has a shorter quiet gap": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0.Add(300 * time.Millisecond),
				Window:      time.Second,
				Changes:     []time.Time{t0.Add(100 * time.Millisecond), t0.Add(200 * time.Millisecond)},
			},
			want:        rollout.Wait,
			wantChanged: []refs.Source{cm},
			wantAfter:   100 * time.Millisecond,
		},
		"a zero window never waits": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     changedCM,
				LastRollout: t0,
				Now:         t0,
				Changes:     []time.Time{t0, t0},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"with waves on, a change rolls when a slot is free": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Waves:   true,
				Slot:    true,
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}},
		},
		"with waves on and no slot free, a change is pending": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Waves:   true,
			},
			want:        rollout.Pending,
			wantChanged: []refs.Source{cm},
		},
		"without a slot, nothing to roll is not pending": {
			in:   rollout.Input{Applied: applied("k", base), Desired: state("k", base), Waves: true},
			want: rollout.None,
		},
		"without a slot, first sight still records the baseline": {
			in:        rollout.Input{Desired: state("k", base), Waves: true},
			want:      rollout.Baseline,
			wantWrite: base,
			wantFirst: true,
		},
		"a change of the halted content is halted": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Waves:   true,
				Slot:    true,
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true}},
			},
			want:        rollout.Halted,
			wantChanged: []refs.Source{cm},
			wantHalt:    rollout.Halt{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true},
		},
		"a halted change inside the window is halted, not waiting": {
			in: rollout.Input{
				Applied:     applied("k", base),
				Desired:     state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				LastRollout: t0,
				Now:         t0.Add(time.Second),
				Window:      5 * time.Second,
				Changes:     []time.Time{t0.Add(900 * time.Millisecond), t0.Add(950 * time.Millisecond)},
				Halts:       []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true}},
			},
			want:        rollout.Halted,
			wantChanged: []refs.Source{cm},
			wantHalt:    rollout.Halt{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true},
		},
		"a halt ends when its source changes again: the change rolls and the hold is removed": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "dddd"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Waves:   true,
				Slot:    true,
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h2", Marked: true}},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   entries{cm: {Digest: "dddd"}, secret: {Shape: "k1", Digest: "bbbb"}},
			wantUnhalt:  true,
		},
		"a hold that has ended waits for a slot like any change": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "dddd"}, secret: {Shape: "k1", Digest: "bbbb"}}),
				Waves:   true,
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h2", Marked: true}},
			},
			want:        rollout.Pending,
			wantChanged: []refs.Source{cm},
			wantUnhalt:  true,
		},
		"a halt of a source the change does not touch holds nothing and is removed": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "eeee"}}),
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true}},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{secret},
			wantWrite:   entries{cm: {Digest: "aaaa"}, secret: {Shape: "k1", Digest: "eeee"}},
			wantUnhalt:  true,
		},
		"a failed rollout elsewhere of a changed source's content halts the change": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}, secret: {Shape: "k1", Digest: "eeee"}}),
				Waves:   true,
				Slot:    true,
				Halts: []rollout.Halt{
					{Source: other, Digest: "k.h9", Now: "k.h9", After: "Deployment shop/a"},
					{Source: secret, Digest: "k.h2", Now: "k.h2", After: "Deployment shop/b"},
				},
			},
			want:        rollout.Halted,
			wantChanged: []refs.Source{cm, secret},
			wantHalt:    rollout.Halt{Source: secret, Digest: "k.h2", Now: "k.h2", After: "Deployment shop/b"},
		},
		"a failed rollout elsewhere of another content halts nothing, and nothing is removed": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", changedCM.Entries),
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h2", After: "Deployment shop/a"}},
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a malformed hold the workload carries holds nothing and is removed": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", base),
				Halts:   []rollout.Halt{{Marked: true}},
			},
			want:       rollout.None,
			wantUnhalt: true,
		},
		"a first sight that would replace a contested state of another key writes nothing": {
			in: rollout.Input{
				Applied:   applied("other", base),
				Desired:   state("k", base),
				Contested: 3 * time.Minute,
			},
			want:      rollout.Contested,
			wantAfter: 3 * time.Minute,
		},
		"a contest does not hold a change of nudge's own state": {
			in: rollout.Input{
				Applied:   applied("k", base),
				Desired:   changedCM,
				Contested: 3 * time.Minute,
			},
			want:        rollout.Roll,
			wantChanged: []refs.Source{cm},
			wantWrite:   changedCM.Entries,
		},
		"a halted change whose required source is missing is held, keeping the halt": {
			in: rollout.Input{
				Applied: applied("k", base),
				Desired: state("k", entries{cm: {Digest: "cccc"}}),
				Missing: []refs.Reference{{Source: secret, Keys: []string{"p"}}},
				Halts:   []rollout.Halt{{Source: cm, Digest: "k.h1", Now: "k.h1", Marked: true}},
			},
			want:        rollout.Hold,
			wantChanged: []refs.Source{cm},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.in.Namespace = "shop"
			tc.in.Sealed = !tc.unsealed
			d := rollout.Decide(tc.in)
			g.Expect(d.Action).To(Equal(tc.want), "action")
			g.Expect(d.Changed).To(Equal(tc.wantChanged), "changed")
			g.Expect(d.FirstSight).To(Equal(tc.wantFirst), "first sight")
			g.Expect(d.RequeueAfter).To(Equal(tc.wantAfter), "requeue after")
			g.Expect(d.Unhalt).To(Equal(tc.wantUnhalt), "unhalt")
			g.Expect(d.Entered).To(Equal(tc.wantEntered), "entered")
			g.Expect(d.Halt).To(Equal(tc.wantHalt), "halt")
			if tc.wantWrite != nil {
				g.Expect(d.Write.Entries).To(Equal(tc.wantWrite), "write")
				g.Expect(d.Write.KeyID).To(Equal("k"), "write key")
			}
		})
	}
}

func TestQuiet(t *testing.T) {
	tests := map[string]struct{ window, want time.Duration }{
		"the default window's quiet gap is a second": {5 * time.Second, time.Second},
		"a long window's is a second":                {time.Hour, time.Second},
		"a short window's is a fifth of it":          {2 * time.Second, 400 * time.Millisecond},
		"a zero window has none":                     {0, 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(rollout.Quiet(tt.window)).To(Equal(tt.want))
		})
	}
}

func TestRecheck(t *testing.T) {
	base := entries{cm: {Digest: "aaaa"}}
	changed := state("k", entries{cm: {Digest: "cccc"}})
	roll := func(now time.Duration, changes ...time.Duration) rollout.Input {
		in := rollout.Input{Applied: applied("k", base), Sealed: true, Namespace: "shop", Desired: changed,
			LastRollout: t0, Now: t0.Add(now), Window: 5 * time.Second}
		for _, c := range changes {
			in.Changes = append(in.Changes, t0.Add(c))
		}
		return in
	}
	tests := map[string]struct {
		in   rollout.Input
		want bool
	}{
		"a lone change its own event brings is rolled as cached": {
			in: roll(2*time.Second, 2*time.Second, -3*time.Second),
		},
		"a change nudge did not see happen, as after a restart, is rechecked": {
			in: roll(2 * time.Second), want: true,
		},
		"the trailing rollout of a burst is rechecked": {
			in: roll(1200*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond), want: true,
		},
		"a burst rolled at the window's end is rechecked": {
			in: roll(5*time.Second, 4900*time.Millisecond, 4950*time.Millisecond), want: true,
		},
		"a burst with no rollout before is rechecked": {
			in: func() rollout.Input {
				in := roll(200*time.Millisecond, 100*time.Millisecond, 150*time.Millisecond)
				in.LastRollout = time.Time{}
				return in
			}(),
			want: true,
		},
		"first sight of a young source is not": {
			in: rollout.Input{Namespace: "shop", Desired: state("k", base), Young: []refs.Source{cm}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := rollout.Decide(tc.in)
			g.Expect(d.Action).To(Equal(rollout.Roll))
			g.Expect(d.Recheck).To(Equal(tc.want))
		})
	}
}

// TestActionWaits classifies every action: a new action fails here until
// it says whether it leaves a change pending (memo.Births keeps a
// workload's young sources across such a decision).
func TestActionWaits(t *testing.T) {
	waits := map[rollout.Action]bool{
		rollout.None: false, rollout.Baseline: false, rollout.Roll: false, rollout.Restored: false,
		rollout.Wait: true, rollout.Hold: true, rollout.Pending: true, rollout.Halted: true,
		rollout.Deferred: true, rollout.Braked: true, rollout.Gated: true, rollout.Paused: true, rollout.Evict: false, rollout.Contested: true,
	}
	for a := rollout.None; !strings.HasPrefix(a.String(), "Action("); a++ {
		want, ok := waits[a]
		if !ok {
			t.Errorf("action %s is not classified: does it leave a change pending?", a)
			continue
		}
		if got := a.Waits(); got != want {
			t.Errorf("%s.Waits() = %v, want %v", a, got, want)
		}
	}
}
