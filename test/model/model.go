// Package model checks nudge's rules across random sequences of changes: a
// small reference model of the rules (this file, pure Go, written from
// docs/design.md and nothing of nudge's code), a generator of sequences
// (generate.go), and a test that plays each sequence against a real
// kube-apiserver and a running nudge and compares, after every step, the
// rollouts each workload has had, as users see them (pod-template changes),
// with the model's.
//
// The model knows sources (ConfigMaps and Secrets with two keys), workloads
// (Deployments, their pod spec's uses of each source and their opt-in
// annotations), and whether nudge runs. A step changes one thing; when nudge
// runs, every workload is then reconciled once, as nudge does level-triggered
// with a rollout window of 0.
//
// With a clock (NewPaced), the model knows the rules that pace rollouts
// too (pace.go): each workload's storm brake budget and the times nudge
// rolled it, its maintenance window, the sources marked urgent, and what
// holds each change, kept across restarts of nudge; steps move the clock
// and rewrite those annotations (TestPaceAcrossSequences, in-process,
// since only there can nudge be given a clock).
//
// The window streams (stream.go, rollouts.go, and TestWindowStreams) cover
// what settling after every step cannot see, the rollout window's timing: a
// seeded random stream of updates to a few ConfigMaps, many within the
// quiet gap of the previous one, plays against nudge with a short window,
// nudge killed and restarted in the middle of it; each Deployment's
// rollouts, ordered by resourceVersion with the updates, are then held to
// History.Check's rules (none without a change, at most one per distinct
// content, none back, nothing lost).
package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Kind is a source's kind: "ConfigMap" or "Secret".
type Kind string

// The source kinds.
const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
)

// SourceID names a source of the sequence's namespace.
type SourceID struct {
	Kind Kind
	Name string
}

func (s SourceID) String() string { return string(s.Kind) + "/" + s.Name }

// Use is how a pod spec reads one source.
type Use int

// The uses. Key uses read the key "k" alone.
const (
	NotRead Use = iota
	Whole
	WholeOptional
	Key
	KeyOptional
)

var useNames = [...]string{"not read", "whole", "whole optional", "key k", "key k optional"}

func (u Use) String() string { return useNames[u] }

func (u Use) whole() bool    { return u == Whole || u == WholeOptional }
func (u Use) optional() bool { return u == WholeOptional || u == KeyOptional }

// ReadKey is the key a Key use reads.
const ReadKey = "k"

// Opt is what a workload's annotations select. Auto (any dialect's auto
// annotation) selects every source the pod spec reads; Named sources count as
// whole objects, optional as the pod spec reads them, and kept (their absence
// neither rolls nor holds) when the pod spec does not read them. The dialect
// fields say which annotations the harness writes; they mean the same.
type Opt struct {
	// AutoDialect is "", "nudge", "reloader" or "wave".
	AutoDialect string
	// NamedDialect is "nudge", "reloader", "pod-reloader" or "wave"; Named
	// is empty when it is "".
	NamedDialect string
	Named        []SourceID
}

// OptedIn reports whether the annotations select anything.
func (o Opt) OptedIn() bool { return o.AutoDialect != "" || len(o.Named) > 0 }

func (o Opt) String() string {
	if !o.OptedIn() {
		return "opted out"
	}
	var parts []string
	if o.AutoDialect != "" {
		parts = append(parts, o.AutoDialect+" auto")
	}
	if len(o.Named) > 0 {
		parts = append(parts, fmt.Sprintf("%s names %v", o.NamedDialect, o.Named))
	}
	return strings.Join(parts, " + ")
}

// Source is one ConfigMap or Secret.
type Source struct {
	Exists bool
	// Data is the content, also kept while the source is deleted (for a
	// re-creation with the same content).
	Data map[string]string
	// Urgent is its nudge.dev/urgent mark: its change rolls outside the
	// maintenance window (rule 15). A re-created source has none.
	Urgent bool
}

// Entry is what a workload's pods run with of one source: the whole object
// or the key k, and the content read ("-" for an optional source that did
// not exist).
type Entry struct {
	Whole   bool
	Content string
}

// Absent is the content of an optional source that does not exist.
const Absent = "-"

// State is a workload's applied state, one Entry per source; nil when it
// has none nudge can use.
type State map[SourceID]Entry

// Template is a pod template as far as it changes: the image, and which of
// nudge's rollouts wrote its trigger (0: none). The pod spec's uses of the
// sources never change.
type Template struct {
	Image, Restart int
}

// Revision is one pod template a Deployment has run, as its ReplicaSet keeps
// it: the template and the Deployment's annotations while it was current.
type Revision struct {
	Template Template
	Opt      Opt
	Applied  State
	Pace     Pace
	Rolled   []time.Time
}

// Workload is one Deployment.
type Workload struct {
	Exists bool
	Uses   map[SourceID]Use
	Opt    Opt
	// Applied is the applied-state annotation; nil when absent. Seal is
	// the state nudge wrote last, which its seal label vouches for; nil when
	// the label is absent. Applied is usable when Seal vouches for it:
	// `kubectl rollout undo` brings back an old Applied, not the label.
	Applied, Seal State
	// Template is the current pod template; GitImage the image of the one
	// the GitOps repository holds (which has no trigger of nudge's).
	Template Template
	GitImage int
	// Revisions are the templates run, oldest first; the last is current.
	Revisions []Revision
	// Rollouts counts pod-template changes since the Deployment was created.
	Rollouts int
	// Pace is its pace annotations (rules 14, 15).
	Pace Pace
	// Rolled holds when nudge rolled it, as its nudge.dev/rollouts
	// annotation keeps them for the storm brake: a GitOps replace drops
	// them with nudge's other annotations, a rollout undo brings back the
	// previous revision's.
	Rolled []time.Time
	// Held is what holds its pending change, as nudge.dev/held says.
	Held Hold
	// Born is when a running nudge saw the workload created, zero when none
	// did (created while nudge was down) or nudge forgot it (a restart, a
	// failover, an opt-out, the workload's first rollout). Young lists the
	// sources of a change that a pace rule held (rules 14, 15) while the
	// workload was young (see Model.young): nudge keeps them until it
	// rolls, so first sight (a GitOps replace, a rollout undo) rolls for
	// them instead of recording them, and they count as changed even when
	// their content returns to the applied one (rule 3's young sources).
	Born  time.Time
	Young []SourceID
}

// Model is the world of one sequence.
type Model struct {
	Sources   map[SourceID]*Source
	Workloads map[string]*Workload
	// Up is true while nudge runs.
	Up bool
	// Now is nudge's clock: it moves by Advance steps alone, and a restart
	// of nudge does not change it.
	Now time.Time
	// Budget is --max-rollouts-per-hour, the storm brake of the workloads
	// without a lower one of their own; 0 sets none.
	Budget int
	// UnbrakedForgets is what nudge does and the rule does not say: a
	// rollout of a workload without a storm brake (budget 0) drops the
	// rollout times kept, so that the brake, set again within the hour,
	// counts none of the rollouts before. By the rule (at most B rollouts
	// in any sliding hour) they count.
	UnbrakedForgets bool
	// ClockLate says nudge's clock runs less than a second after Now (a
	// world that moves it a microsecond a step, so that two rollouts never
	// share an instant): see rolledAt.
	ClockLate bool
	// Holds counts the holds of rules 14 and 15 that began, by reason.
	Holds    map[string]int
	restarts int
}

// New returns a world with no object, nudge running, and no storm brake:
// its clock stands still.
func New() *Model {
	return &Model{Sources: map[SourceID]*Source{}, Workloads: map[string]*Workload{}, Up: true, Holds: map[string]int{}}
}

// NewPaced returns a world with no object and nudge running, its clock at
// now (whole seconds: nudge.dev/rollouts keeps Unix seconds) and the storm
// brake's budget of --max-rollouts-per-hour (0: none).
func NewPaced(now time.Time, budget int) *Model {
	m := New()
	m.Now, m.Budget = now.UTC().Truncate(time.Second), budget
	return m
}

// rolled returns w's template with a new trigger of nudge's.
func (m *Model) rolled(w *Workload) Template {
	m.restarts++
	return Template{Image: w.Template.Image, Restart: m.restarts}
}

// setTemplate makes t the workload's template: a rollout as users see it
// when it differs from the current one, and the newest revision.
func (w *Workload) setTemplate(t Template) {
	if t == w.Template {
		return
	}
	w.Rollouts++
	w.Template = t
	w.Revisions = slices.DeleteFunc(w.Revisions, func(r Revision) bool { return r.Template == t })
	w.Revisions = append(w.Revisions, Revision{Template: t})
	if len(w.Revisions) > RevisionHistoryLimit {
		w.Revisions = w.Revisions[len(w.Revisions)-RevisionHistoryLimit:]
	}
}

// RevisionHistoryLimit is how many revisions a Deployment keeps (its
// default spec.revisionHistoryLimit, 10, plus the current one).
const RevisionHistoryLimit = 11

// remember records the current annotations on the current revision, as the
// Deployment controller copies them to the newest ReplicaSet.
func (w *Workload) remember() {
	r := &w.Revisions[len(w.Revisions)-1]
	r.Opt, r.Applied, r.Pace, r.Rolled = w.Opt, maps.Clone(w.Applied), w.Pace, slices.Clone(w.Rolled)
}

// settle reconciles every workload once when nudge runs, then records each
// one's annotations on its current revision.
func (m *Model) settle() {
	for _, w := range m.Workloads {
		if !w.Exists {
			continue
		}
		if m.Up {
			m.reconcile(w)
		}
		w.remember()
	}
}

// selected is one source a workload's annotations select.
type selected struct {
	whole, optional, namedOnly bool
}

// selection returns what w's annotations select (see Opt).
func (w *Workload) selection() map[SourceID]selected {
	sel := map[SourceID]selected{}
	if w.Opt.AutoDialect != "" {
		for s, u := range w.Uses {
			if u != NotRead {
				sel[s] = selected{whole: u.whole(), optional: u.optional()}
			}
		}
	}
	for _, s := range w.Opt.Named {
		u := w.Uses[s]
		sel[s] = selected{whole: true, optional: u == NotRead || u.optional(), namedOnly: u == NotRead}
	}
	return sel
}

// read returns what a use reads of data.
func read(data map[string]string, whole bool) string {
	if !whole {
		return data[ReadKey]
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		parts = append(parts, k+"="+data[k])
	}
	return strings.Join(parts, ",")
}

// reconcile applies the rules to one workload:
//   - not opted in: nudge's state is removed (rule 3: opting in again is
//     first sight), its rollout times with it (rule 14), and nothing is
//     held;
//   - no usable state (none, or not the one the seal vouches for): the
//     desired state is recorded, no rollout (rules 3, 7);
//   - a source in both states, read the same way, with other content is a
//     change (rules 1, 2, 8); an optional source appearing or disappearing
//     too (rule 5);
//   - a change while a required source is missing rolls nothing and stays
//     pending (rule 5); a missing required or kept source keeps its entry;
//   - a change outside the maintenance window, none of its changed sources
//     urgent, or past the storm brake's budget is held: nothing is written,
//     and it rolls once the hold ends (rules 14, 15: see hold);
//   - otherwise one rollout for every change together; sources entering or
//     leaving are recorded without one (rule 3).
func (m *Model) reconcile(w *Workload) {
	if !w.Opt.OptedIn() {
		// Opting out drops nudge's state, the storm brake's record of
		// rollouts too (rule 14): opting in again counts from then on.
		w.Applied, w.Seal, w.Held, w.Rolled = nil, nil, Hold{}, nil
		w.Born, w.Young = time.Time{}, nil
		return
	}
	desired, keep, missing := m.desired(w)
	var changed []SourceID
	if w.Applied == nil || w.Seal == nil || !maps.Equal(w.Applied, w.Seal) {
		// First sight rolls for the young sources of a held change; with
		// none, or a required source missing, it records a baseline.
		changed = slices.DeleteFunc(slices.Clone(w.Young), func(s SourceID) bool {
			d, ok := desired[s]
			return !ok || d.Content == Absent
		})
		if len(changed) == 0 || missing {
			w.Applied, w.Seal, w.Held, w.Young = desired, desired, Hold{}, nil
			return
		}
	}
	for s, d := range desired {
		// A young source held counts even with its applied content back
		// (rule 3's A, B, A): pods made just after the creation may have
		// started with what it held in between.
		a, ok := w.Applied[s]
		if ok && a.Whole == d.Whole && (a.Content != d.Content || slices.Contains(w.Young, s)) && !slices.Contains(changed, s) {
			changed = append(changed, s)
		}
	}
	if len(changed) > 0 && missing {
		w.Held = Hold{Reason: HeldMissing}
		return
	}
	if len(changed) > 0 {
		if h := m.hold(w, changed); h.Reason != "" {
			if h.Reason != w.Held.Reason {
				m.Holds[h.Reason]++
			}
			if m.young(w) {
				for _, s := range changed {
					if !slices.Contains(w.Young, s) {
						w.Young = append(w.Young, s)
					}
				}
			}
			w.Held = h
			return
		}
	}
	for _, s := range keep {
		if a, ok := w.Applied[s]; ok {
			desired[s] = a
		}
	}
	if len(changed) > 0 {
		w.setTemplate(m.rolled(w))
		w.Born, w.Young = time.Time{}, nil
		if w.Rolled = append(w.Rolled, m.rolledAt()); m.UnbrakedForgets && m.budget(w) == 0 {
			w.Rolled = nil
		}
	}
	w.Applied, w.Seal, w.Held = desired, desired, Hold{}
}

// desired returns what w's pods would run with of the sources selected now:
// an entry per existing source, Absent for an optional one that does not
// exist; keep lists the missing required and kept sources (whose applied
// entries stay), and missing is true when a required source is missing.
func (m *Model) desired(w *Workload) (desired State, keep []SourceID, missing bool) {
	desired = State{}
	for s, sel := range w.selection() {
		src := m.Sources[s]
		switch {
		case src != nil && src.Exists:
			desired[s] = Entry{Whole: sel.whole, Content: read(src.Data, sel.whole)}
		case sel.namedOnly:
			keep = append(keep, s)
		case sel.optional:
			desired[s] = Entry{Whole: sel.whole, Content: Absent}
		default:
			missing = true
			keep = append(keep, s)
		}
	}
	return desired, keep, missing
}

// Lost returns, for each workload that nudge manages (opted in, with a
// usable state) and that no missing required source holds, the sources
// whose content differs from what its applied state says its pods run
// with: changes not rolled. After the last hold has ended, nothing may be
// lost.
func (m *Model) Lost() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.Workloads)) {
		w := m.Workloads[name]
		if !w.Exists || !w.Opt.OptedIn() || w.Applied == nil {
			continue
		}
		desired, _, missing := m.desired(w)
		if missing {
			continue
		}
		for _, s := range slices.SortedFunc(maps.Keys(desired), compare) {
			if a, ok := w.Applied[s]; !ok || a != desired[s] {
				out = append(out, fmt.Sprintf("%s: %s is %+v, its applied state says %+v", name, s, desired[s], a))
			}
		}
	}
	return out
}
