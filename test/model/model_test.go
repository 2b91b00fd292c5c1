package model_test

import (
	"testing"

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

	for name, tc := range map[string]struct {
		steps []model.Step
		want  int
	}{
		"a change rolls once": {
			steps: []model.Step{data(cm, "1", "1"), create(whole, auto), change(cm, "2", "1")}, want: 1,
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
