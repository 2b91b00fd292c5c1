package model

import (
	"slices"
	"strconv"
	"time"
)

// The rules that pace rollouts, as docs/reference.md and
// docs/operations.md state them:
//
//   - Rule 14, the storm brake: a workload has at most B rollouts by nudge
//     in any sliding hour, B its nudge.dev/max-rollouts-per-hour, else
//     --max-rollouts-per-hour; 0 sets none. Past it, a change is held
//     (nudge.dev/held "RolloutStorm since … until …"); when the oldest
//     rollout of the hour leaves the hour, the workload rolls once, with
//     the content as it is then. The rollout times are kept in the
//     workload's nudge.dev/rollouts annotation, so a restart keeps the hold.
//   - Rule 15, maintenance windows: a change made while the workload's
//     nudge.dev/maintenance-window is closed is held (nudge.dev/held
//     "RolloutDeferred since … until …") and rolls once when it opens; a
//     change while it is open rolls at once; a change of a source marked
//     nudge.dev/urgent rolls at once, window or not (the storm brake still
//     counts).
//
// Both hold a change that would roll, and write nothing while they hold, so
// the applied state keeps the change pending; a change held by both is
// said to wait for the window.

// StormPeriod is the storm brake's sliding period.
const StormPeriod = time.Hour

// MaintenanceWindow is the one maintenance window of the sequences
// (Pace.Window): open every day from 02:00 to 03:00 UTC, the opening
// instant open, the closing one closed.
const MaintenanceWindow = "0 2 * * * 1h"

// WindowOpen reports whether MaintenanceWindow is open at t.
func WindowOpen(t time.Time) bool { return t.UTC().Hour() == 2 }

// WindowOpens returns t when MaintenanceWindow is open at t, else the
// instant it next opens.
func WindowOpens(t time.Time) time.Time {
	if WindowOpen(t) {
		return t
	}
	u := t.UTC()
	open := time.Date(u.Year(), u.Month(), u.Day(), 2, 0, 0, 0, time.UTC)
	if !open.After(u) {
		open = open.AddDate(0, 0, 1)
	}
	return open
}

// WindowCloses returns, when MaintenanceWindow is open at t, the instant
// it closes; else the zero time.
func WindowCloses(t time.Time) time.Time {
	if !WindowOpen(t) {
		return time.Time{}
	}
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), u.Day(), 3, 0, 0, 0, time.UTC)
}

// Pace is a workload's pace annotations.
type Pace struct {
	// Budget is its nudge.dev/max-rollouts-per-hour, "" when it has none
	// (--max-rollouts-per-hour counts, as it does when the annotation would
	// raise or lift it).
	Budget string
	// Window is true when it has nudge.dev/maintenance-window:
	// MaintenanceWindow.
	Window bool
}

func (p Pace) String() string {
	b := "budget of the flag"
	if p.Budget != "" {
		b = "budget " + p.Budget
	}
	if p.Window {
		return b + ", window " + MaintenanceWindow
	}
	return b + ", no window"
}

// The reasons of Hold.
const (
	// HeldStorm: past the storm brake's budget.
	HeldStorm = "RolloutStorm"
	// HeldWindow: outside the maintenance window.
	HeldWindow = "RolloutDeferred"
	// HeldMissing: a required source is missing (rule 5). What
	// nudge.dev/held then says is not a rule's: a hold of a pace rule may
	// still be recorded, or none.
	HeldMissing = "missing source"
)

// Hold is what holds a workload's pending change.
type Hold struct {
	// Reason is HeldStorm, HeldWindow, HeldMissing, or "" when nothing is
	// held.
	Reason string
	// Until is when a pace rule's hold ends, as nudge.dev/held says it.
	Until time.Time
}

func (h Hold) String() string {
	switch h.Reason {
	case "":
		return "nothing held"
	case HeldMissing:
		return "held by a missing source"
	}
	return h.Reason + " until " + h.Until.UTC().Format(time.RFC3339)
}

// budget returns w's storm brake budget: its annotation's when it tightens
// the flag's (at least 1 and at most the flag's, or any when the flag sets
// no brake), else the flag's: without --allow-workload-overrides an
// annotation never raises or lifts the brake.
func (m *Model) budget(w *Workload) int {
	n, err := strconv.Atoi(w.Pace.Budget)
	if err != nil || n < 0 {
		return m.Budget
	}
	if m.Budget == 0 || (n > 0 && n <= m.Budget) {
		return n
	}
	return m.Budget
}

// recent returns, sorted, w's rollouts by nudge within StormPeriod of
// m.Now (a rollout's time is recorded rounded up to the second, so it may
// be after m.Now: see Model.rolledAt).
func (m *Model) recent(w *Workload) []time.Time {
	var out []time.Time
	for _, t := range w.Rolled {
		if d := m.Now.Sub(t); d < StormPeriod && d > -StormPeriod {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// young reports whether nudge still remembers w's creation as young
// (memo.Births): it saw it, and it was less than sources.Young (a minute)
// ago or w holds young sources already.
func (m *Model) young(w *Workload) bool {
	return !w.Born.IsZero() && (m.Now.Sub(w.Born) <= time.Minute || len(w.Young) > 0)
}

// forgetBirths forgets what a stopped nudge remembered of the workloads'
// creations and their young sources (memo.Births lives in memory).
func (m *Model) forgetBirths() {
	for _, w := range m.Workloads {
		w.Born, w.Young = time.Time{}, nil
	}
}

// rolledAt returns the time a rollout at m.Now is recorded with for the
// storm brake: nudge.dev/rollouts holds Unix seconds rounded up, so that a
// budget frees no earlier than StormPeriod after the rollout. With
// ClockLate, nudge's clock is a little after m.Now, so the time recorded is
// the second after m.Now's.
func (m *Model) rolledAt() time.Time {
	t := m.Now.Truncate(time.Second)
	if m.ClockLate || !t.Equal(m.Now) {
		t = t.Add(time.Second)
	}
	return t
}

// hold returns what of rules 14 and 15 holds w's change of the sources
// changed: the window when it is closed and none of them is urgent, then
// the storm brake when w had its budget of rollouts in the last hour
// (until the oldest of the last budget's leaves it); the zero Hold when
// the change rolls.
func (m *Model) hold(w *Workload, changed []SourceID) Hold {
	urgent := slices.ContainsFunc(changed, func(s SourceID) bool {
		src := m.Sources[s]
		return src != nil && src.Exists && src.Urgent
	})
	if w.Pace.Window && !urgent && !WindowOpen(m.Now) {
		return Hold{Reason: HeldWindow, Until: WindowOpens(m.Now)}
	}
	if b := m.budget(w); b > 0 {
		if recent := m.recent(w); len(recent) >= b {
			return Hold{Reason: HeldStorm, Until: recent[len(recent)-b].Add(StormPeriod)}
		}
	}
	return Hold{}
}
