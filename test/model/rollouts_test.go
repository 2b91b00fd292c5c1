package model_test

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/model"
)

// The rules of a window stream's rollouts, on sequences of updates and
// rollouts ordered by resourceVersion: each case is the history of the
// Deployment w-a (reading cm-a) or w-ab (cm-a and cm-b) from its baseline at
// rv 100, and the rules it breaks. Final, unless the case sets it, is the
// last version of each source: nothing lost.
func TestCheckRollouts(t *testing.T) {
	u := func(src string, v int, rv int64) model.Update { return model.Update{Source: src, Version: v, RV: rv} }
	r := func(rv int64, a int) model.Rollout { return model.Rollout{RV: rv, Wrote: map[string]int{"cm-a": a}} }
	r2 := func(rv int64, a, b int) model.Rollout {
		return model.Rollout{RV: rv, Wrote: map[string]int{"cm-a": a, "cm-b": b}}
	}
	for name, tc := range map[string]struct {
		two      bool // w-ab, reading cm-a and cm-b
		updates  []model.Update
		rollouts []model.Rollout
		// final replaces Final when set is true.
		final map[string]int
		set   bool
		want  []string
	}{
		"no update and no rollout keep the rules": {},
		"a rollout per update keeps the rules": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120)},
			rollouts: []model.Rollout{r(111, 1), r(121, 2)},
		},
		"a burst folded into one trailing rollout keeps the rules": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120), u("cm-a", 3, 130), u("cm-a", 4, 140)},
			rollouts: []model.Rollout{r(111, 1), r(150, 4)},
		},
		"a rollout written from a cache behind an update committed before it still holds that update": {
			// The rollout at 112 wrote v1, but v2 was committed at 111:
			// the pods it makes read v2, so the one at 130 changes nothing.
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 111)},
			rollouts: []model.Rollout{r(112, 1), r(130, 2)},
			want:     []string{model.NoChange},
		},
		"an update committed just after a rollout needs a rollout of its own": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 112)},
			rollouts: []model.Rollout{r(111, 1), r(130, 2)},
		},
		"a trailing rollout of superseded content, then one of the latest, is one without a change": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120), u("cm-a", 3, 125)},
			rollouts: []model.Rollout{r(111, 1), r(140, 2), r(150, 3)},
			want:     []string{model.NoChange},
		},
		"a rollout with no update since the baseline is one without a change": {
			rollouts: []model.Rollout{r(110, 0)},
			want:     []string{model.NoChange, model.Duplicate},
		},
		"rollouts and updates in any order are ordered by resourceVersion": {
			updates:  []model.Update{u("cm-a", 2, 120), u("cm-a", 1, 110)},
			rollouts: []model.Rollout{r(121, 2), r(111, 1)},
		},
		"two rollouts writing the same content are one too many": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120)},
			rollouts: []model.Rollout{r(111, 1), r(121, 1), r(130, 2)},
			want:     []string{model.Duplicate, model.NoChange},
		},
		"a rollout writing older content than an earlier one is a rollout back": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120), u("cm-a", 3, 130), u("cm-a", 4, 140)},
			rollouts: []model.Rollout{r(121, 2), r(131, 1), r(141, 4)},
			want:     []string{model.Back},
		},
		"an update recorded without a rollout is lost": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120)},
			rollouts: []model.Rollout{r(111, 1)},
			want:     []string{model.Lost},
		},
		"updates never rolled are lost": {
			updates: []model.Update{u("cm-a", 1, 110)},
			want:    []string{model.Lost},
		},
		"an applied state without the last version is lost": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-a", 2, 120)},
			rollouts: []model.Rollout{r(121, 1)},
			final:    map[string]int{"cm-a": 1}, set: true,
			want: []string{model.Lost},
		},
		"an applied state that could not be read is lost": {
			set:  true,
			want: []string{model.Lost},
		},
		"a digest of no version written is unknown content": {
			updates:  []model.Update{u("cm-a", 1, 110)},
			rollouts: []model.Rollout{r(111, model.Unknown)},
			want:     []string{model.UnknownContent},
		},
		"updates of a source the Deployment does not read are no change": {
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-c", 1, 115)},
			rollouts: []model.Rollout{r(111, 1), r(120, 1)},
			want:     []string{model.NoChange, model.Duplicate},
		},
		"a Deployment reading two sources rolls for either": {
			two:      true,
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-b", 1, 120)},
			rollouts: []model.Rollout{r2(111, 1, 0), r2(121, 1, 1)},
		},
		"a Deployment reading two sources rolls once for both changed together": {
			two:      true,
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-b", 1, 111)},
			rollouts: []model.Rollout{r2(112, 1, 1)},
		},
		"a Deployment reading two sources may not roll one back while rolling the other": {
			two:      true,
			updates:  []model.Update{u("cm-a", 1, 110), u("cm-b", 1, 120)},
			rollouts: []model.Rollout{r2(111, 1, 0), r2(121, 0, 1), r2(130, 1, 1)},
			want:     []string{model.Back, model.NoChange},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			h := model.History{Workload: "w-a", Sources: []string{"cm-a"}, Start: 100, Updates: tc.updates, Rollouts: tc.rollouts}
			if tc.two {
				h.Workload, h.Sources = "w-ab", []string{"cm-a", "cm-b"}
			}
			h.Final = model.Versions(h.Sources, tc.updates)
			if tc.set {
				h.Final = tc.final
			}
			var rules []string
			for _, v := range h.Check() {
				g.Expect(v.Workload).To(Equal(h.Workload))
				rules = append(rules, v.Rule)
			}
			slices.Sort(rules)
			want := slices.Sorted(slices.Values(tc.want))
			g.Expect(rules).To(Equal(want), "violations: %v", h.Check())
		})
	}
}

// A violation names the Deployment, the rollouts (resourceVersion, time,
// content written and held) and the updates around them.
func TestCheckRolloutsSays(t *testing.T) {
	g := NewWithT(t)
	at := func(ms int) time.Time { return time.Date(2025, 1, 1, 12, 0, 0, ms*int(time.Millisecond), time.UTC) }
	h := model.History{
		Workload: "w-a", Sources: []string{"cm-a"}, Start: 100,
		Updates: []model.Update{
			{Source: "cm-a", Version: 1, RV: 110, At: at(0)},
			{Source: "cm-a", Version: 2, RV: 120, At: at(100)},
			{Source: "cm-a", Version: 3, RV: 125, At: at(150)},
		},
		Rollouts: []model.Rollout{
			{RV: 111, At: at(10), Wrote: map[string]int{"cm-a": 1}},
			{RV: 140, At: at(600), Wrote: map[string]int{"cm-a": 2}},
			{RV: 150, At: at(700), Wrote: map[string]int{"cm-a": 3}},
		},
		Final: map[string]int{"cm-a": 3},
	}
	g.Expect(h.Check()).To(HaveExactElements(model.Violation{
		Workload: "w-a", Rule: model.NoChange,
		Detail: "the rollout at rv 150 (12:00:00.700) that wrote cm-a v3 came after " +
			"the rollout at rv 140 (12:00:00.600) that wrote cm-a v2 (the API server held cm-a v3) " +
			"with no update of cm-a between them; " +
			"the updates before it: cm-a v2 at rv 120 (12:00:00.100), cm-a v3 at rv 125 (12:00:00.150); the next after it: none",
	}))
}
