package model_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/model"
)

// The model itself, on the rules' own examples: each case plays steps on a
// fresh model and states the rollouts the workload w0 must have had.
func TestModel(t *testing.T) {
	cm := model.SourceID{Kind: model.ConfigMap, Name: "cm-a"}
	sec := model.SourceID{Kind: model.Secret, Name: "sec-c"}
	auto := model.Opt{AutoDialect: "nudge"}
	create := func(uses map[model.SourceID]model.Use, opt model.Opt) model.Step {
		return model.Step{Op: model.CreateWorkload, Workload: "w0", Uses: uses, Opt: opt, Image: 1}
	}
	data := func(id model.SourceID, k, x string) model.Step {
		return model.Step{Op: model.CreateSource, Source: id, Data: map[string]string{"k": k, "x": x}}
	}
	change := func(id model.SourceID, k, x string) model.Step {
		s := data(id, k, x)
		s.Op = model.ChangeData
		return s
	}
	del := func(id model.SourceID) model.Step { return model.Step{Op: model.DeleteSource, Source: id} }
	whole := map[model.SourceID]model.Use{cm: model.Whole}
	// atOnce is a workload's creation followed at once by a source's step.
	atOnce := func(create, then model.Step) model.Step {
		create.Then = &then
		return create
	}

	for name, tc := range map[string]struct {
		steps []model.Step
		want  int
	}{
		"a change rolls once": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), change(cm, "2", "1")}, want: 1,
		},
		"an optional source created at once after its workload rolls it once": {
			steps: []model.Step{atOnce(create(map[model.SourceID]model.Use{cm: model.WholeOptional}, auto), data(cm, "1", "1"))},
			want:  1,
		},
		"an optional source deleted at once after its workload rolls it once": {
			steps: []model.Step{data(cm, "1", "1"), atOnce(create(map[model.SourceID]model.Use{cm: model.KeyOptional}, auto), del(cm))},
			want:  1,
		},
		"a required source created at once after its workload rolls nothing": {
			steps: []model.Step{atOnce(create(whole, auto), data(cm, "1", "1"))},
		},
		"a required source deleted at once after its workload holds, and rolls when back with other content": {
			steps: []model.Step{data(cm, "1", "1"), atOnce(create(whole, auto), del(cm)), data(cm, "2", "1")},
			want:  1,
		},
		"a workload created rolls nothing": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto)}, want: 0,
		},
		"a label change rolls nothing": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), {Op: model.ChangeLabels, Source: cm}}, want: 0,
		},
		"a key not read rolls nothing": {
			steps: []model.Step{data(cm, "1", "1"), create(map[model.SourceID]model.Use{cm: model.Key}, auto), change(cm, "1", "2")},
		},
		"a deleted required source holds a change until it returns": {
			steps: []model.Step{data(cm, "1", "1"), data(sec, "1", "1"),
				create(map[model.SourceID]model.Use{cm: model.Whole, sec: model.Whole}, auto),
				del(cm), change(sec, "2", "1"), data(cm, "1", "1")},
			want: 1,
		},
		"a required source back with the same content rolls nothing": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), del(cm), data(cm, "1", "1")},
		},
		"a required source back with other content rolls once": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), del(cm), data(cm, "2", "1")}, want: 1,
		},
		"an optional source that appears and disappears rolls twice": {
			steps: []model.Step{create(map[model.SourceID]model.Use{cm: model.KeyOptional}, auto), data(cm, "1", "1"), del(cm)},
			want:  2,
		},
		"a named source the pod spec does not read is kept when deleted": {
			steps: []model.Step{data(cm, "1", "1"), create(nil, model.Opt{NamedDialect: "reloader", Named: []model.SourceID{cm}}),
				del(cm), data(cm, "1", "1"), del(cm), data(cm, "2", "1")},
			want: 1,
		},
		"a named source the pod spec reads as required holds when deleted": {
			steps: []model.Step{data(cm, "1", "1"), data(sec, "1", "1"),
				create(map[model.SourceID]model.Use{cm: model.Whole, sec: model.Whole}, model.Opt{NamedDialect: "pod-reloader", Named: []model.SourceID{cm, sec}}),
				del(cm), change(sec, "2", "1")},
		},
		"a change while nudge is down rolls once at its start": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), {Op: model.StopNudge},
				change(cm, "2", "1"), change(cm, "3", "1"), {Op: model.StartNudge}},
			want: 1,
		},
		"opting in again is first sight": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), {Op: model.SetOpt, Workload: "w0"},
				change(cm, "2", "1"), {Op: model.SetOpt, Workload: "w0", Opt: auto}},
		},
		"a GitOps replace rolls by its own write, and nudge records its state at once": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), change(cm, "2", "1"), {Op: model.GitOps, Workload: "w0"},
				{Op: model.StopNudge}, change(cm, "3", "1"), {Op: model.StartNudge}},
			want: 3,
		},
		"rollout undo rolls by its own write and is first sight": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), change(cm, "2", "1"), {Op: model.StopNudge},
				change(cm, "3", "1"), {Op: model.Undo, Workload: "w0"}, {Op: model.StartNudge}},
			want: 2,
		},
		"undoing an undo brings back the sealed state": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), change(cm, "2", "1"), {Op: model.StopNudge},
				change(cm, "3", "1"), {Op: model.Undo, Workload: "w0"}, {Op: model.Undo, Workload: "w0"}, {Op: model.StartNudge}},
			want: 4,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m := model.New()
			for _, s := range tc.steps {
				m.Apply(s)
			}
			g.Expect(m.Workloads["w0"].Rollouts).To(Equal(tc.want))
		})
	}
}

// The model of the rules that pace rollouts (14, 15), on their own
// examples: each case plays steps on a fresh model whose clock starts at
// 12:00 UTC, with --max-rollouts-per-hour 3 and ConfigMap cm-a, then
// states the rollouts Deployment w0 (reading cm-a whole) must have had and
// what holds its change.
func TestPaceModel(t *testing.T) {
	cm := model.SourceID{Kind: model.ConfigMap, Name: "cm-a"}
	start := time.Date(2030, 1, 7, 12, 0, 0, 0, time.UTC)
	create := func(p model.Pace) model.Step {
		return model.Step{Op: model.CreateWorkload, Workload: "w0", Uses: map[model.SourceID]model.Use{cm: model.Whole},
			Opt: model.Opt{AutoDialect: "nudge"}, Image: 1, Pace: p}
	}
	n := 0
	change := func() model.Step {
		n++
		return model.Step{Op: model.ChangeData, Source: cm, Data: map[string]string{"k": fmt.Sprint(n)}}
	}
	back := model.Step{Op: model.ChangeData, Source: cm, Data: map[string]string{"k": "0"}}
	advance := func(d time.Duration) model.Step { return model.Step{Op: model.Advance, By: d} }
	urgent := model.Step{Op: model.MarkUrgent, Source: cm, Urgent: true}
	window := model.Pace{Window: true}
	twoAnHour := model.Pace{Budget: "2"}

	for name, tc := range map[string]struct {
		steps    []model.Step
		rollouts int
		held     string
		until    time.Time
	}{
		"within the budget every change rolls at once": {
			steps: []model.Step{create(twoAnHour), change(), change()}, rollouts: 2,
		},
		"past the budget a change is held until the oldest rollout of the hour leaves it": {
			steps:    []model.Step{create(twoAnHour), change(), advance(time.Minute), change(), change(), advance(59*time.Minute - time.Second)},
			rollouts: 2, held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a held change rolls once, with the content as it is then, when the budget frees": {
			steps:    []model.Step{create(twoAnHour), change(), change(), change(), change(), advance(time.Hour), change(), change()},
			rollouts: 4, held: model.HeldStorm, until: start.Add(2 * time.Hour),
		},
		"the flag's budget brakes a workload without its own": {
			steps: []model.Step{create(model.Pace{}), change(), change(), change(), change()}, rollouts: 3, held: model.HeldStorm,
			until: start.Add(time.Hour),
		},
		"a budget of 0 would lift the flag's brake: refused, the flag's brakes": {
			steps: []model.Step{create(model.Pace{Budget: "0"}), change(), change(), change(), change(), change()}, rollouts: 3,
			held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a budget above the flag's is refused: the flag's brakes": {
			steps: []model.Step{create(model.Pace{Budget: "5"}), change(), change(), change(), change(), change()}, rollouts: 3,
			held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a budget raised rolls the held change": {
			steps:    []model.Step{create(model.Pace{Budget: "1"}), change(), change(), {Op: model.SetBudget, Workload: "w0", Pace: twoAnHour}},
			rollouts: 2,
		},
		"the hold is kept across a restart of nudge": {
			steps:    []model.Step{create(model.Pace{Budget: "1"}), change(), change(), {Op: model.RestartNudge}, change()},
			rollouts: 1, held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a GitOps replace drops the rollout times with nudge's annotations": {
			steps:    []model.Step{create(model.Pace{Budget: "1"}), change(), {Op: model.GitOps, Workload: "w0"}, change(), change()},
			rollouts: 3, held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a change outside the window is held until it opens": {
			steps: []model.Step{create(window), change(), advance(14*time.Hour - time.Second)}, held: model.HeldWindow,
			until: start.Add(14 * time.Hour),
		},
		"a held change rolls once when the window opens": {
			steps: []model.Step{create(window), change(), change(), advance(14 * time.Hour)}, rollouts: 1,
		},
		"a change while the window is open rolls at once": {
			steps: []model.Step{advance(14*time.Hour + 59*time.Minute), create(window), change()}, rollouts: 1,
		},
		"the window's closing instant is closed": {
			steps: []model.Step{advance(15 * time.Hour), create(window), change()}, held: model.HeldWindow,
			until: start.Add(38 * time.Hour),
		},
		"an urgent source's change rolls outside the window": {
			steps: []model.Step{create(window), urgent, change()}, rollouts: 1,
		},
		"a held change rolls once its source is marked urgent": {
			steps: []model.Step{create(window), change(), urgent}, rollouts: 1,
		},
		"an urgent change still counts against the budget": {
			steps: []model.Step{create(model.Pace{Budget: "1", Window: true}), urgent, change(), change()}, rollouts: 1,
			held: model.HeldStorm, until: start.Add(time.Hour),
		},
		"a change back to what the pods run with ends the hold without a rollout": {
			steps: []model.Step{create(window), advance(2 * time.Minute), change(), back},
		},
		"a change back just after the creation stays held: the pods may run the change (rule 3)": {
			steps: []model.Step{create(window), change(), back}, held: model.HeldWindow, until: start.Add(14 * time.Hour),
		},
		"opting out ends the hold": {
			steps: []model.Step{create(window), change(), {Op: model.SetOpt, Workload: "w0"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m := model.NewPaced(start, 3)
			m.Apply(model.Step{Op: model.CreateSource, Source: cm, Data: map[string]string{"k": "0"}})
			for _, s := range tc.steps {
				m.Apply(s)
			}
			w := m.Workloads["w0"]
			g.Expect(w.Rollouts).To(Equal(tc.rollouts), "rollouts")
			g.Expect(w.Held).To(Equal(model.Hold{Reason: tc.held, Until: tc.until}), "what holds the change")
			if tc.held == "" {
				g.Expect(m.Lost()).To(BeEmpty(), "nothing pending")
			}
		})
	}
}
