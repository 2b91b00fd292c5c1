package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// paced returns, for decision d of o's workload, Deferred (its window is
// closed) or Braked (the storm brake), the nudge.dev/held act writes: why,
// since and until when the change waits (see workload.Held.Over); ok is
// false when the workload carries that wait already, and begins says that
// the wait begins, its Event recorded then (see recordPace). The rollout
// that ends it removes the annotation (see workload.Change.EndHold).
func paced(o *observed, d rollout.Decision) (value string, ok, begins bool) {
	if d.Action != rollout.Deferred && d.Action != rollout.Braked {
		return "", false, false
	}
	h := workload.Held{Reason: paceReason(d), Since: o.in.Now, Until: o.in.Now.Add(d.RequeueAfter), Sources: refs.Names(d.Changed)}
	return h.Over(o.obj.GetAnnotations()[workload.HeldAnnotation])
}

// paceReason returns the Event reason of a paced decision d.
func paceReason(d rollout.Decision) string {
	if d.Action == rollout.Braked {
		return record.ReasonRolloutStorm
	}
	return record.ReasonRolloutDeferred
}

// recordPace records the Event of a wait that began (see paced): a Warning
// RolloutStorm or a Normal RolloutDeferred.
func (r *Reconciler) recordPace(ctx context.Context, o *observed, d rollout.Decision) {
	until := o.in.Now.Add(d.RequeueAfter)
	if paceReason(d) == record.ReasonRolloutStorm {
		r.record(ctx, o.obj, record.Cause{Reason: record.ReasonRolloutStorm, Note: fmt.Sprintf(
			"Held the rollout for %s: %s %s was rolled %d times in the last hour, its budget "+
				"(--max-rollouts-per-hour or nudge.dev/max-rollouts-per-hour); it rolls once, with the content as it is then, at %s",
			refs.Names(d.Changed), r.Kind.Name(), o.obj.GetName(), o.in.Budget, until.UTC().Format(time.RFC3339))})
		return
	}
	r.Recorder.Eventf(o.obj, nil, corev1.EventTypeNormal, record.ReasonRolloutDeferred, "Defer", "%s", record.Note(fmt.Sprintf(
		"Deferred the rollout for %s to the maintenance window, which opens at %s", refs.Names(d.Changed), until.UTC().Format(time.RFC3339))))
	ctrl.LoggerFrom(ctx).Info("Deferred rollout of "+r.Kind.Name()+" to its maintenance window", "kind", r.Kind.Name(),
		"sources", refs.Names(d.Changed), "opens", until)
}
