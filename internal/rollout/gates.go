package rollout

import (
	"slices"
	"time"

	"nudge.dev/nudge/internal/refs"
)

// StormPeriod is the storm brake's sliding period: a workload may have at
// most Input.Budget rollouts in any StormPeriod.
const StormPeriod = time.Hour

// Schedule says when a workload may roll: a maintenance window
// (maintenance.Window).
type Schedule interface {
	// Open reports whether t is inside the window.
	Open(t time.Time) bool
	// Next returns t when Open(t), else when the window next opens.
	Next(t time.Time) time.Time
}

// Gates is the part of Input the gates read: the maintenance window, the
// storm brake and the producers not ready.
type Gates struct {
	// Maintenance, when not nil, says when the workload may roll: its
	// maintenance window (nudge.dev/maintenance-window on it or its
	// Namespace, or --maintenance-window). A rollout outside it is Deferred.
	Maintenance Schedule
	// Urgent lists the sources marked nudge.dev/urgent: a change of one of
	// them rolls outside the maintenance window.
	Urgent []refs.Source
	// Budget is the storm brake: the most rollouts the workload may have in
	// any StormPeriod (--max-rollouts-per-hour, or the workload's
	// nudge.dev/max-rollouts-per-hour); 0 sets none.
	Budget int
	// Rolled holds when nudge rolled the workload, as its
	// nudge.dev/rollouts annotation records them (the last Budget at most),
	// in any order.
	Rolled []time.Time
	// Unready lists the sources whose producer (an ExternalSecret, a
	// cert-manager Certificate) is not ready yet, while the wait for it has
	// not timed out; UnreadyUntil is when it does.
	Unready      []refs.Source
	UnreadyUntil time.Time
}

// gate returns what becomes of d, a Roll, under the gates a rollout must
// pass beyond the window (rules 14 to 16): outside the maintenance window
// it is Deferred, unless a changed source is urgent; past the storm
// brake's budget, Braked; while a changed source's producer is not ready,
// Gated. Each waits with RequeueAfter set to when it may end (the window
// opens, the budget frees, the producer's wait times out), and writes
// nothing of the rollout (Deferred and Braked record their hold, see the
// reconciler's hold): the change stays pending in the applied state, so
// nudge's restart keeps it, and it rolls once, with the sources' content as
// it is then. A Roll that passes carries the rollout times to record
// (Decision.Rolled).
func gate(in Input, d Decision) Decision {
	waitUntil := func(a Action, until time.Time) Decision {
		return Decision{Action: a, Changed: d.Changed, Unhalt: d.Unhalt, RequeueAfter: max(until.Sub(in.Now), 0)}
	}
	urgent := slices.ContainsFunc(d.Changed, func(s refs.Source) bool { return slices.Contains(in.Urgent, s) })
	if in.Maintenance != nil && !urgent && !in.Maintenance.Open(in.Now) {
		// A window that never opens again (a schedule of a day that no
		// longer comes) holds nothing: nothing is lost.
		if next := in.Maintenance.Next(in.Now); next.After(in.Now) {
			return waitUntil(Deferred, next)
		}
	}
	recent := in.recent()
	if in.Budget > 0 && len(recent) >= in.Budget {
		// The budget frees when the oldest of the last Budget rollouts
		// leaves the period.
		return waitUntil(Braked, recent[len(recent)-in.Budget].Add(StormPeriod))
	}
	if slices.ContainsFunc(d.Changed, func(s refs.Source) bool { return slices.Contains(in.Unready, s) }) {
		return waitUntil(Gated, in.UnreadyUntil)
	}
	if in.Budget > 0 {
		keep := recent[max(0, len(recent)-in.Budget+1):]
		d.Rolled = append(slices.Clone(keep), in.Now)
	}
	return d
}

// recent returns, sorted, the rollouts of in.Rolled within StormPeriod of
// in.Now, before or after it. A rollout recorded after now is counted: its
// time is rounded up to the second (workload.FormatRollouts), and another
// nudge's clock may run ahead of this one's; a time further ahead than
// StormPeriod is no rollout's, and ignored, so that a hand-written time
// far in the future cannot hold the workload for longer than one period.
func (in Input) recent() []time.Time {
	var out []time.Time
	for _, t := range in.Rolled {
		if d := in.Now.Sub(t); d < StormPeriod && d > -StormPeriod {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
