package controller

import (
	"fmt"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// verdict is the one decision a reconcile acts on, rollout.Decide's, and
// the Warnings the workload deserves with it.
type verdict struct {
	rollout.Decision
	// causes are the Warnings the workload deserves now: those observed,
	// and the decision's own (see decisionCause, resolve.ProducerWarning).
	causes []record.Cause
	// held, when not nil, is the nudge.dev/held act writes for a paced
	// change (see paced); heldBegins says that its wait begins.
	held       *string
	heldBegins bool
}

// decide takes, once, the decision a reconcile acts on for the workload o:
// rollout.Decide's on o's inputs, with the Warnings it deserves. It is
// pure: everything the decision needs was gathered by observe.
func (r *Reconciler) decide(o *observed) verdict {
	v := verdict{Decision: rollout.Decide(o.in), causes: o.causes}
	if c, ok := decisionCause(v.Decision, ownership.WrittenBackBy(o.obj.GetManagedFields())); ok {
		v.causes = append(v.causes, c)
	}
	if c, ok := resolve.ProducerWarning(v.Decision, o.lateProducers, r.ProducerTimeout, o.key.Namespace); ok {
		v.causes = append(v.causes, c)
	}
	if v.Action == rollout.Contested {
		v.causes = append(v.causes, o.contest)
	}
	if held, ok, begins := paced(o, v.Decision); ok {
		v.held, v.heldBegins = &held, begins
	}
	return v
}

// decisionCause returns the Warning a decision deserves, if any; by is the
// manager that wrote a restored state back.
func decisionCause(d rollout.Decision, by string) (record.Cause, bool) {
	switch d.Action {
	case rollout.Hold:
		return record.Cause{Reason: record.ReasonRolloutHeld, Note: fmt.Sprintf(
			"Held the rollout for %s until the missing required source(s) exist", refs.Names(d.Changed))}, true
	case rollout.Halted:
		h := d.Halt
		return record.Cause{Reason: record.ReasonRolloutHalted, Note: fmt.Sprintf(
			"Halted the rollout for %s %s/%s: the rollout of %s for the same content failed. It resumes when %s changes again, or when the annotation %s is removed",
			h.Source.Kind, h.Source.Namespace, h.Source.Name, h.After, h.Source.Name, fleet.HaltedAnnotation)}, true
	case rollout.Restored:
		return record.Cause{Reason: record.ReasonStateRestored, Note: fmt.Sprintf(
			"%s and the label %s were set back by %s to a state nudge had replaced (a manifest exported from the live object "+
				"and applied again?); nudge does not roll for it, so that it and the tool that wrote it do not take turns. "+
				"Remove nudge.dev/ keys from the manifest", workload.AppliedAnnotation, workload.SealLabel, by)}, true
	}
	return record.Cause{}, false
}
