package eviction

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Pod is what the plan reads of one pod of the owner.
type Pod struct {
	// Name and UID are the pod's.
	Name string
	UID  types.UID
	// Created is the pod's creationTimestamp (whole seconds, rounded down
	// by the API server).
	Created time.Time
	// Ready is the pod's Ready condition.
	Ready bool
	// Deleting says the pod has a deletionTimestamp: it is on its way out.
	Deleting bool
}

// Input is what Plan decides on.
type Input struct {
	// Pods are the owner's pods now.
	Pods []Pod
	// Progress is the restart's progress: Since, the change, and when the
	// last pod was evicted.
	Progress Progress
	// Want is how many pods the owner wants (a StatefulSet's replicas, a
	// DaemonSet's desired number scheduled); 0 when the owner does not
	// say, and then Progress.Pods is taken, or, without it, the pods seen.
	Want int
	// MaxUnavailable is how many pods may be unavailable at once; below 1
	// counts as 1.
	MaxUnavailable int
	// Now is the time of the plan.
	Now time.Time
	// Unobserved says the owner's controller has not observed the change
	// yet (see Owner.Observed): a pod evicted now would come back from
	// the old template, so nothing is.
	Unobserved bool
	// Timeout is how long a replacement may take to be Ready after an
	// eviction (--rollout-timeout); 0 for no limit.
	Timeout time.Duration
}

// Step is what Plan answers.
type Step int

// The values of Step.
const (
	// Done: no pod predates the change and every pod is available; the
	// progress is removed.
	Done Step = iota
	// Evict: evict the pods of Plan.Evict now.
	Evict
	// Wait: a replacement is not Ready yet, or the change's second has
	// not passed; come back after Plan.After.
	Wait
	// Stuck: a replacement was not Ready within the timeout; the restart
	// halts.
	Stuck
)

// String returns the step's name.
func (s Step) String() string {
	return [...]string{"Done", "Evict", "Wait", "Stuck"}[s]
}

// Plan is the plan's answer.
type Plan struct {
	Step Step
	// Evict are the pods to evict now, oldest first: the unavailable
	// pods that predate the change (evicting them takes nothing more
	// away), then as many available ones as MaxUnavailable leaves room
	// for.
	Evict []Pod
	// Old is how many pods still predate the change, those on their way
	// out included.
	Old int
	// After, for Wait, is when to look again at the latest; the pods'
	// own events may come first.
	After time.Duration
}

// waitAgain is how soon a Wait for a replacement looks again, should no
// event of the pods come first.
const waitAgain = 2 * time.Second

// Unfinished returns whether the restart is unfinished
// (nudge_unfinished_restarts) once p is carried out, observed being what
// was read before (Observed.Unfinished): no longer once Done, halted once
// Stuck, as observed otherwise.
func (p Plan) Unfinished(observed bool) bool {
	switch p.Step {
	case Done:
		return false
	case Stuck:
		return true
	}
	return observed
}

// PlanOf returns the plan of a restart whose input is in: which pods to
// evict now, or to wait, or that it is done or stuck.
//
// A pod created before in.Progress.Since predates the change and is
// evicted once; one created at or after it never is. Creation times are
// whole seconds, rounded down, so a pod created in the change's own second
// may be counted as predating it: no pod is left running from before the
// change, and nothing is evicted before the second after it, so that every
// replacement counts as after. Pods are unavailable when not Ready or on
// their way out, and so are those missing from the count wanted: no pod is
// evicted while MaxUnavailable are; past in.Timeout after the last
// eviction, the restart is Stuck.
func PlanOf(in Input) Plan {
	want := in.Want
	if want <= 0 {
		want = in.Progress.Pods
	}
	var old, oldDown []Pod
	ready := 0
	for _, p := range in.Pods {
		up := p.Ready && !p.Deleting
		if up {
			ready++
		}
		if !p.Created.Before(in.Progress.Since) {
			continue
		}
		switch {
		case !up && !p.Deleting:
			oldDown = append(oldDown, p)
		case up:
			old = append(old, p)
		}
	}
	if want <= 0 {
		want = len(in.Pods)
	}
	plan := Plan{Old: len(old) + len(oldDown)}
	for _, p := range in.Pods {
		if p.Deleting && p.Created.Before(in.Progress.Since) {
			plan.Old++
		}
	}
	down := max(want-ready, 0)
	if plan.Old == 0 && down == 0 {
		return Plan{Step: Done}
	}
	if next := in.Progress.Since.Truncate(time.Second).Add(time.Second); in.Now.Before(next) {
		return Plan{Step: Wait, Old: plan.Old, After: next.Sub(in.Now)}
	}
	if in.Unobserved {
		return Plan{Step: Wait, Old: plan.Old, After: waitAgain}
	}
	byAge := func(a, b Pod) int { return a.Created.Compare(b.Created) }
	slices.SortStableFunc(oldDown, byAge)
	slices.SortStableFunc(old, byAge)
	plan.Evict = append(plan.Evict, oldDown...)
	room := max(in.MaxUnavailable, 1) - down
	for i := 0; i < room && i < len(old); i++ {
		plan.Evict = append(plan.Evict, old[i])
	}
	if len(plan.Evict) > 0 {
		plan.Step = Evict
		return plan
	}
	since := in.Progress.Evicted
	if since.IsZero() {
		since = in.Progress.Since
	}
	if in.Timeout > 0 {
		left := since.Add(in.Timeout).Sub(in.Now)
		if left <= 0 {
			plan.Step = Stuck
			return plan
		}
		plan.After = min(left, waitAgain)
	} else {
		plan.After = waitAgain
	}
	plan.Step = Wait
	return plan
}
