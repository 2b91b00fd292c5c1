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

// pace records on o's workload that decision d, Deferred (its window is
// closed) or Braked (the storm brake), paces a change: why, since and until
// when it waits (workload.HeldAnnotation), and one Event, a Warning
// RolloutStorm or a Normal RolloutDeferred, only when the wait begins, so
// once per wait across restarts. The rollout that ends it removes the
// annotation (see endPace). It returns the write's error.
func (r *Reconciler) pace(ctx context.Context, o *observed, d rollout.Decision) error {
	reason, until := record.ReasonRolloutDeferred, o.in.Now.Add(d.RequeueAfter)
	if d.Action == rollout.Braked {
		reason = record.ReasonRolloutStorm
	}
	paced := workload.Held{Reason: reason, Since: o.in.Now, Until: until, Sources: refs.Names(d.Changed)}
	before, ok := workload.ParseHeld(o.obj.GetAnnotations()[workload.HeldAnnotation])
	same := ok && before.Reason == reason
	if same {
		if before.Until.Equal(until.Truncate(time.Second)) {
			return nil
		}
		paced.Since = before.Since // the same wait, its end moved
	}
	value := paced.String()
	c := workload.Change{ResourceVersion: o.obj.GetResourceVersion(), Annotations: map[string]*string{workload.HeldAnnotation: &value}}
	if err := r.apply(ctx, o.obj, c); err != nil || same {
		return err // the same wait's Event was recorded when it began
	}
	if reason == record.ReasonRolloutStorm {
		r.record(ctx, o.obj, record.Cause{Reason: reason, Note: fmt.Sprintf(
			"Held the rollout for %s: %s %s was rolled %d times in the last hour, its budget "+
				"(--max-rollouts-per-hour or nudge.dev/max-rollouts-per-hour); it rolls once, with the content as it is then, at %s",
			refs.Names(d.Changed), r.Kind.Name(), o.obj.GetName(), o.in.Budget, until.UTC().Format(time.RFC3339))})
		return nil
	}
	r.Recorder.Eventf(o.obj, nil, corev1.EventTypeNormal, reason, "Defer", "%s", record.Note(fmt.Sprintf(
		"Deferred the rollout for %s to the maintenance window, which opens at %s", refs.Names(d.Changed), until.UTC().Format(time.RFC3339))))
	ctrl.LoggerFrom(ctx).Info("Deferred rollout of "+r.Kind.Name()+" to its maintenance window", "kind", r.Kind.Name(),
		"sources", refs.Names(d.Changed), "opens", until)
	return nil
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
