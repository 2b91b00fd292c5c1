package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// paced returns, for decision d of o's workload, Deferred (its window is
// closed) or Braked (the storm brake), the nudge.dev/held act writes: why,
// since and until when the change waits (workload.HeldAnnotation); ok is
// false when the workload carries that wait already. begins says that the
// wait begins with this write: its Event is recorded then (see
// recordPace), so once per wait across restarts. The rollout that ends it
// removes the annotation (see endPace).
func paced(o *observed, d rollout.Decision) (value string, ok, begins bool) {
	if d.Action != rollout.Deferred && d.Action != rollout.Braked {
		return "", false, false
	}
	reason, until := paceReason(d), o.in.Now.Add(d.RequeueAfter)
	held := workload.Held{Reason: reason, Since: o.in.Now, Until: until, Sources: refs.Names(d.Changed)}
	before, parsed := workload.ParseHeld(o.obj.GetAnnotations()[workload.HeldAnnotation])
	same := parsed && before.Reason == reason
	if same {
		if before.Until.Equal(until.Truncate(time.Second)) {
			return "", false, false
		}
		held.Since = before.Since // the same wait, its end moved
	}
	return held.String(), true, !same
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

// endPace sets in c the end of the wait o's workload carries (see pace), for
// the write of a rollout or a baseline, and the rollout times the storm
// brake counts (rollout.Decision.Rolled; removed when there are none to
// keep).
func endPace(obj client.Object, c *workload.Change, rolled []time.Time) {
	if _, ok := obj.GetAnnotations()[workload.HeldAnnotation]; ok {
		c.Annotations[workload.HeldAnnotation] = nil
	}
	if len(rolled) > 0 {
		v := workload.FormatRollouts(rolled)
		c.Annotations[workload.RolloutsAnnotation] = &v
	} else if _, ok := obj.GetAnnotations()[workload.RolloutsAnnotation]; ok {
		c.Annotations[workload.RolloutsAnnotation] = nil
	}
}
