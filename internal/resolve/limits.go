package resolve

import (
	"strconv"
	"time"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/rollout"
)

// Override is an annotation of a workload that would loosen a limit a flag
// sets, refused while --allow-workload-overrides is off: the flag's value
// is used instead.
type Override struct {
	// Annotation names it: dialect.NudgeRolloutWindow or
	// dialect.NudgeMaxRolloutsPerHour.
	Annotation string
	// Flag names the flag whose limit it would loosen, "--rollout-window"
	// or "--max-rollouts-per-hour".
	Flag string
	// Value is the annotation's value as read, Limit the flag's, each as the
	// flag would take it ("0s", "5s"; "0", "30").
	Value, Limit string
}

// Limits returns the rollout window and the storm brake's budget of a
// workload whose dialect spec is given, and the annotations refused: each
// of nudge.dev/rollout-window and nudge.dev/max-rollouts-per-hour replaces
// its flag's value (r.Window, r.Budget) when it tightens it, or with
// Pace.Overrides (--allow-workload-overrides) whatever it is; otherwise the
// flag's value is used and the annotation is returned as an Override.
//
// Tighter means fewer rollouts: a window at least as long (changes within
// it fold into one rollout), and a budget of at least 1 and at most the
// flag's, or any budget when the flag's is 0 (no brake at all is the
// loosest: 0 on the workload is then no change).
func (r Resolver) Limits(spec dialect.Spec) (window time.Duration, budget int, refused []Override) {
	window, budget = r.Window, r.Budget
	if spec.Window != nil {
		if w := *spec.Window; r.Overrides || w >= r.Window {
			window = w
		} else {
			refused = append(refused, Override{Annotation: dialect.NudgeRolloutWindow, Flag: "--rollout-window",
				Value: w.String(), Limit: r.Window.String()})
		}
	}
	if spec.Budget != nil {
		if b := *spec.Budget; r.Overrides || r.Budget == 0 || (b > 0 && b <= r.Budget) {
			budget = b
		} else {
			refused = append(refused, Override{Annotation: dialect.NudgeMaxRolloutsPerHour, Flag: "--max-rollouts-per-hour",
				Value: strconv.Itoa(b), Limit: strconv.Itoa(r.Budget)})
		}
	}
	return window, budget, refused
}

// maxSteps bounds the search of Within's Next: the openings of its windows
// it looks at before it gives up on their ever being open together.
const maxSteps = 512

// within is the intersection of maintenance windows (see Within).
type within []rollout.Schedule

// Within returns the schedule open when every one of schedules is: a
// workload's maintenance window narrowed by its Namespace's and by
// --maintenance-window, none of them lifting another. Its Next is the
// earliest time at or after t at which all are open; when they are never
// open together within maxSteps openings (or five years), it gives up and
// returns the first schedule's Next: the outermost limit (the flag's, else
// the Namespace's) holds alone, never none. schedules must not be empty.
func Within(schedules ...rollout.Schedule) rollout.Schedule {
	if len(schedules) == 1 {
		return schedules[0]
	}
	return within(schedules)
}

// Open reports whether every schedule is open at t.
func (w within) Open(t time.Time) bool {
	for _, s := range w {
		if !s.Open(t) {
			return false
		}
	}
	return true
}

// Next returns the earliest time at or after t at which every schedule is
// open: it moves x to the latest of the schedules' Next(x) until all are
// open at x. No time before such an x has them all open, as each Next is
// the earliest opening of its schedule at or after x.
func (w within) Next(t time.Time) time.Time {
	x := t
	for range maxSteps {
		latest := x
		for _, s := range w {
			n := s.Next(x)
			if n.IsZero() {
				return w[0].Next(t)
			}
			if n.After(latest) {
				latest = n
			}
		}
		if latest.Equal(x) {
			return x
		}
		x = latest
	}
	return w[0].Next(t)
}
