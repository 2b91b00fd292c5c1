package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Op is the kind of a step.
type Op string

// The steps. Each is one write to the API (or one change to nudge), so that
// what nudge must make of it is never ambiguous.
const (
	CreateSource   Op = "create source"
	ChangeData     Op = "change data"
	ChangeLabels   Op = "change labels"
	DeleteSource   Op = "delete source"
	CreateWorkload Op = "create workload"
	// SetOpt rewrites a workload's opt-in annotations (opting out when
	// Opt selects nothing).
	SetOpt Op = "set annotations"
	// Undo is `kubectl rollout undo`: the previous revision's template and
	// annotations, the labels (nudge's seal) left as they are.
	Undo Op = "rollout undo"
	// GitOps replaces the workload with the repository's manifest: the
	// annotations of Opt, no label or annotation of nudge's, the
	// repository's template.
	GitOps Op = "gitops replace"
	// GitOpsKeepingKeys applies a manifest exported from the live object
	// (nudge's keys and seal included) with a new image.
	GitOpsKeepingKeys Op = "gitops replace keeping nudge's keys"
	StopNudge         Op = "stop nudge"
	StartNudge        Op = "start nudge"
	RestartNudge      Op = "restart nudge"
	// Failover stops one of two replicas (the leader or not) and starts
	// another.
	Failover Op = "failover"
	// Advance moves nudge's clock forward by By; every workload is then
	// reconciled (nudge's requeues run on the real clock: the world pokes
	// each workload with a metadata change that changes nothing nudge
	// reads).
	Advance Op = "advance the clock"
	// SetBudget and SetWindow rewrite a workload's pace annotations to
	// Pace: its nudge.dev/max-rollouts-per-hour, its
	// nudge.dev/maintenance-window.
	SetBudget Op = "set the budget"
	SetWindow Op = "set the window"
	// MarkUrgent sets a source's nudge.dev/urgent mark to Urgent.
	MarkUrgent Op = "mark urgent"
)

// Step is one step of a sequence.
type Step struct {
	Op       Op
	Source   SourceID
	Workload string
	// Data is the new content (CreateSource, ChangeData).
	Data map[string]string
	// Uses is the pod spec (CreateWorkload).
	Uses map[SourceID]Use
	// Opt is the annotations (CreateWorkload, SetOpt).
	Opt Opt
	// Abrupt: StopNudge, RestartNudge and Failover kill rather than stop,
	// where the runner can.
	Abrupt bool
	// Replica is which of two replicas Failover stops.
	Replica int
	// Image is the image of the new manifest (CreateWorkload,
	// GitOpsKeepingKeys), never used before in the sequence.
	Image int
	// Pace is the pace annotations (CreateWorkload, SetBudget, SetWindow).
	Pace Pace
	// By is how far the clock moves (Advance): whole seconds, positive.
	By time.Duration
	// Urgent is the source's nudge.dev/urgent mark (MarkUrgent).
	Urgent bool
	// Then, for CreateWorkload, is a source's step made at once after the
	// creation, before nudge is waited for (Generator.AtOnce). The model
	// plays it after the workload's first reconcile: rule 3 says a change
	// just after a workload's creation rolls it whichever nudge sees first.
	Then *Step
}

func (s Step) String() string {
	switch s.Op {
	case CreateSource, ChangeData:
		return fmt.Sprintf("%s %s %v", s.Op, s.Source, s.Data)
	case ChangeLabels, DeleteSource:
		return fmt.Sprintf("%s %s", s.Op, s.Source)
	case CreateWorkload:
		var uses []string
		for _, src := range slices.SortedFunc(maps.Keys(s.Uses), func(a, b SourceID) int { return strings.Compare(a.String(), b.String()) }) {
			if s.Uses[src] != NotRead {
				uses = append(uses, fmt.Sprintf("%s %s", src, s.Uses[src]))
			}
		}
		line := fmt.Sprintf("%s %s reading [%s], %s, %s, image %d", s.Op, s.Workload, strings.Join(uses, ", "), s.Opt, s.Pace, s.Image)
		if s.Then != nil {
			line += ", then at once " + s.Then.String()
		}
		return line
	case SetBudget, SetWindow:
		return fmt.Sprintf("%s of %s: %s", s.Op, s.Workload, s.Pace)
	case MarkUrgent:
		return fmt.Sprintf("%s %s: %t", s.Op, s.Source, s.Urgent)
	case Advance:
		return fmt.Sprintf("%s by %s", s.Op, s.By)
	case SetOpt:
		return fmt.Sprintf("%s of %s: %s", s.Op, s.Workload, s.Opt)
	case Undo, GitOps:
		return fmt.Sprintf("%s %s", s.Op, s.Workload)
	case GitOpsKeepingKeys:
		return fmt.Sprintf("%s %s, image %d", s.Op, s.Workload, s.Image)
	case Failover:
		return fmt.Sprintf("%s (replica %d, abrupt %t)", s.Op, s.Replica, s.Abrupt)
	default:
		return fmt.Sprintf("%s (abrupt %t)", s.Op, s.Abrupt)
	}
}

// Apply plays step s on the model.
func (m *Model) Apply(s Step) {
	src, w := m.Sources[s.Source], m.Workloads[s.Workload]
	switch s.Op {
	case CreateSource:
		m.Sources[s.Source] = &Source{Exists: true, Data: maps.Clone(s.Data)}
	case ChangeData:
		src.Data = maps.Clone(s.Data)
	case DeleteSource:
		src.Exists = false
	case CreateWorkload:
		t := Template{Image: s.Image}
		w := &Workload{Exists: true, Uses: s.Uses, Opt: s.Opt, Template: t, GitImage: s.Image,
			Revisions: []Revision{{Template: t}}, Pace: s.Pace}
		if m.Up {
			w.Born = m.Now
		}
		m.Workloads[s.Workload] = w
	case SetOpt, SetBudget, SetWindow:
		if s.Op == SetOpt {
			w.Opt = s.Opt
		} else {
			w.Pace = s.Pace
		}
		// The write changes the annotations alone: the revision current
		// at it keeps them, should nudge roll the workload for it (a hold
		// ended, a missing source no longer selected).
		w.remember()
	case MarkUrgent:
		src.Urgent = s.Urgent
	case Advance:
		m.Now = m.Now.Add(s.By)
	case Undo:
		prev := w.Revisions[len(w.Revisions)-2]
		w.setTemplate(prev.Template)
		w.Opt, w.Applied, w.Pace, w.Rolled = prev.Opt, prev.Applied, prev.Pace, slices.Clone(prev.Rolled)
	case GitOps:
		// The repository's manifest holds the workload's own annotations
		// (Opt, Pace), none of nudge's: its rollout times go.
		w.Applied, w.Seal, w.Rolled, w.Held = nil, nil, nil, Hold{}
		w.setTemplate(Template{Image: w.GitImage})
	case GitOpsKeepingKeys:
		w.GitImage = s.Image
		w.setTemplate(Template{Image: s.Image, Restart: w.Template.Restart})
	case StopNudge:
		m.Up = false
		m.forgetBirths()
	case RestartNudge, Failover:
		// A failover may stop the replica that is not the leader, whose
		// memory was empty: the model cannot tell, and forgets. Youth
		// matters only to a held change replaced or undone before it rolls.
		m.forgetBirths()
	case StartNudge:
		m.Up = true
	}
	m.settle()
	if s.Then != nil {
		m.Apply(*s.Then)
	}
}
