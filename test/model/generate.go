package model

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// Sources returns the sources of every sequence: two ConfigMaps and a
// Secret.
func Sources() []SourceID {
	return []SourceID{{Kind: ConfigMap, Name: "cm-a"}, {Kind: ConfigMap, Name: "cm-b"}, {Kind: Secret, Name: "sec-c"}}
}

// Workloads returns the names of the Deployments of every sequence.
func Workloads() []string { return []string{"w0", "w1", "w2"} }

// Generator draws the steps of one sequence from a seeded source, each one
// valid in the model's current world (a source is deleted only when it
// exists, a rollout undone only when there is a previous revision, ...).
type Generator struct {
	r              *rand.Rand
	values, images int
	// HA: nudge runs as two replicas with leader election (Failover steps).
	HA bool
	// Steady: no step stops, restarts or fails nudge over (a soak measures
	// one process).
	Steady bool
	// Pace: steps of the rules that pace rollouts too (rules 14, 15):
	// workloads created with pace annotations, the annotations rewritten,
	// sources marked urgent, the clock moved.
	Pace bool
	// AtOnce: a workload's creation is sometimes followed at once, without
	// waiting for nudge, by a source's creation, update or deletion (a
	// GitOps apply of both, Reloader's suites): whichever nudge sees
	// first, the outcome is the model's, which sees the workload first.
	AtOnce bool
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64, ha bool) *Generator {
	return &Generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), HA: ha}
}

// candidate is a step and its weight.
type candidate struct {
	weight int
	step   func() Step
}

// Next returns a step valid in m.
func (g *Generator) Next(m *Model) Step {
	var cs []candidate
	add := func(weight int, step func() Step) { cs = append(cs, candidate{weight, step}) }
	for _, id := range Sources() {
		src := m.Sources[id]
		switch {
		case src == nil:
			add(4, func() Step { return Step{Op: CreateSource, Source: id, Data: g.data(nil)} })
		case !src.Exists:
			add(2, func() Step { return Step{Op: CreateSource, Source: id, Data: maps.Clone(src.Data)} })
			add(2, func() Step { return Step{Op: CreateSource, Source: id, Data: g.data(src.Data)} })
		default:
			add(6, func() Step { return Step{Op: ChangeData, Source: id, Data: g.data(src.Data)} })
			add(1, func() Step { return Step{Op: ChangeLabels, Source: id} })
			add(2, func() Step { return Step{Op: DeleteSource, Source: id} })
			if g.Pace {
				add(1, func() Step { return Step{Op: MarkUrgent, Source: id, Urgent: !src.Urgent} })
			}
		}
	}
	if g.Pace {
		add(8, func() Step { return Step{Op: Advance, By: g.advance(m)} })
	}
	for _, name := range Workloads() {
		w := m.Workloads[name]
		if w == nil {
			add(4, func() Step {
				return Step{Op: CreateWorkload, Workload: name, Uses: g.uses(), Opt: g.opt(false), Image: g.image(), Pace: g.pace()}
			})
			if g.AtOnce {
				add(3, func() Step {
					s := Step{Op: CreateWorkload, Workload: name, Uses: g.uses(), Opt: g.opt(false), Image: g.image(), Pace: g.pace()}
					// A workload created while a source it requires is
					// missing has pods that start once it exists, with
					// what the sources hold then: nudge's first sight
					// baselines it (no young source, docs/design.md rule
					// 3), which the model's order (first sight, then the
					// step) would not. Such a creation has no step at once.
					if _, _, missing := m.desired(&Workload{Uses: s.Uses, Opt: s.Opt}); !missing {
						then := g.sourceStep(m)
						s.Then = &then
					}
					return s
				})
			}
			continue
		}
		if g.Pace {
			add(1, func() Step {
				p := w.Pace
				for p.Budget == w.Pace.Budget {
					p.Budget = g.budget()
				}
				return Step{Op: SetBudget, Workload: name, Pace: p}
			})
			add(1, func() Step {
				return Step{Op: SetWindow, Workload: name, Pace: Pace{Budget: w.Pace.Budget, Window: !w.Pace.Window}}
			})
		}
		add(2, func() Step { return Step{Op: SetOpt, Workload: name, Opt: g.opt(w.Opt.OptedIn())} })
		if len(w.Revisions) >= 2 {
			add(1, func() Step { return Step{Op: Undo, Workload: name} })
		}
		add(1, func() Step { return Step{Op: GitOps, Workload: name} })
		add(1, func() Step { return Step{Op: GitOpsKeepingKeys, Workload: name, Image: g.image()} })
	}
	switch {
	case g.Steady:
	case m.Up:
		add(1, func() Step { return Step{Op: StopNudge, Abrupt: g.r.IntN(2) == 0} })
		add(1, func() Step { return Step{Op: RestartNudge, Abrupt: g.r.IntN(2) == 0} })
		if g.HA {
			add(2, func() Step { return Step{Op: Failover, Abrupt: g.r.IntN(2) == 0, Replica: g.r.IntN(2)} })
		}
	default:
		add(8, func() Step { return Step{Op: StartNudge} })
	}
	total := 0
	for _, c := range cs {
		total += c.weight
	}
	n := g.r.IntN(total)
	for _, c := range cs {
		if n < c.weight {
			return c.step()
		}
		n -= c.weight
	}
	panic("unreachable")
}

// sourceStep returns a step of one source, valid in m: its creation when
// it does not exist (with new content, or the content it had), else an
// update of its content or its deletion.
func (g *Generator) sourceStep(m *Model) Step {
	id := Sources()[g.r.IntN(len(Sources()))]
	src := m.Sources[id]
	switch {
	case src == nil:
		return Step{Op: CreateSource, Source: id, Data: g.data(nil)}
	case !src.Exists && g.r.IntN(2) == 0:
		return Step{Op: CreateSource, Source: id, Data: maps.Clone(src.Data)}
	case !src.Exists:
		return Step{Op: CreateSource, Source: id, Data: g.data(src.Data)}
	case g.r.IntN(2) == 0:
		return Step{Op: ChangeData, Source: id, Data: g.data(src.Data)}
	}
	return Step{Op: DeleteSource, Source: id}
}

// image returns an image number never returned before.
func (g *Generator) image() int {
	g.images++
	return g.images
}

// data returns new content: from prev, one key changed (the key k, read
// alone by some workloads, or x), sometimes back to a value it had.
func (g *Generator) data(prev map[string]string) map[string]string {
	g.values++
	v := fmt.Sprintf("v%d", g.values)
	if prev == nil {
		return map[string]string{ReadKey: v, "x": v}
	}
	d := maps.Clone(prev)
	key := []string{ReadKey, "x"}[g.r.IntN(2)]
	if g.r.IntN(5) == 0 {
		v = "v0"
	}
	d[key] = v
	return d
}

// uses returns a pod spec: each source read in one of the ways, or not.
func (g *Generator) uses() map[SourceID]Use {
	u := map[SourceID]Use{}
	for _, id := range Sources() {
		if n := g.r.IntN(7); n > 2 {
			u[id] = Use(n - 2)
		}
	}
	return u
}

// opt returns annotations; opted out only sometimes, and more often when
// the workload is opted in now.
func (g *Generator) opt(optedIn bool) Opt {
	out := 6
	if optedIn {
		out = 3
	}
	if g.r.IntN(out) == 0 {
		return Opt{}
	}
	for {
		o := Opt{AutoDialect: []string{"", "nudge", "reloader", "wave"}[g.r.IntN(4)]}
		if g.r.IntN(2) == 0 {
			o.NamedDialect = []string{"nudge", "reloader", "pod-reloader", "wave"}[g.r.IntN(4)]
			for _, id := range Sources() {
				if g.r.IntN(2) == 0 {
					o.Named = append(o.Named, id)
				}
			}
			if len(o.Named) == 0 {
				o.NamedDialect = ""
			}
		}
		if o.OptedIn() {
			slices.SortFunc(o.Named, func(a, b SourceID) int { return compare(a, b) })
			return o
		}
	}
}

func compare(a, b SourceID) int {
	switch {
	case a.String() < b.String():
		return -1
	case a.String() > b.String():
		return 1
	}
	return 0
}

// Start returns the clock's start for a sequence played on day: a time of
// that day, in whole seconds, drawn from the seed (the window is daily).
func (g *Generator) Start(day time.Time) time.Time {
	d := day.UTC()
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC).Add(time.Duration(g.r.IntN(24*3600)) * time.Second)
}

// pace returns a new workload's pace annotations: without a pace step, none.
func (g *Generator) pace() Pace {
	if !g.Pace {
		return Pace{}
	}
	return Pace{Budget: g.budget(), Window: g.r.IntN(3) == 0}
}

// budget returns a nudge.dev/max-rollouts-per-hour: none (the flag's),
// none at all, or a small one.
func (g *Generator) budget() string {
	return []string{"", "", "0", "1", "2", "2"}[g.r.IntN(6)]
}

// advance returns how far to move the clock: seconds to a day, and the
// instants where a rule's answer turns, and the second before each: a
// hold's end, the window's opening and closing.
func (g *Generator) advance(m *Model) time.Duration {
	ds := []time.Duration{time.Second, 20 * time.Second, 4 * time.Minute, 17 * time.Minute, 45 * time.Minute,
		StormPeriod, StormPeriod + time.Second, 3 * time.Hour, 26 * time.Hour}
	edge := func(t time.Time) {
		if d := t.Sub(m.Now); d > 0 {
			ds = append(ds, d, d, d-time.Second)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Workloads)) {
		if h := m.Workloads[name].Held; h.Reason == HeldStorm || h.Reason == HeldWindow {
			edge(h.Until)
		}
	}
	edge(WindowOpens(m.Now))
	edge(WindowCloses(m.Now))
	for {
		if d := ds[g.r.IntN(len(ds))]; d > 0 {
			return d
		}
	}
}
