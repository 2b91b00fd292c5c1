package resolve

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/maintenance"
	"nudge.dev/nudge/internal/rollout"
)

func TestLimits(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	n := func(v int) *int { return &v }
	windowRefused := func(value, limit string) Override {
		return Override{Annotation: dialect.NudgeRolloutWindow, Flag: "--rollout-window", Value: value, Limit: limit}
	}
	budgetRefused := func(value, limit string) Override {
		return Override{Annotation: dialect.NudgeMaxRolloutsPerHour, Flag: "--max-rollouts-per-hour", Value: value, Limit: limit}
	}
	tests := map[string]struct {
		window    time.Duration // --rollout-window
		budget    int           // --max-rollouts-per-hour
		overrides bool          // --allow-workload-overrides
		spec      dialect.Spec
		// wantWindow and wantBudget are what the workload gets.
		wantWindow time.Duration
		wantBudget int
		refused    []Override
	}{
		"no annotation: the flags'": {
			window: 5 * time.Second, budget: 30, wantWindow: 5 * time.Second, wantBudget: 30,
		},
		"a longer window tightens: taken": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Window: d(time.Minute)},
			wantWindow: time.Minute, wantBudget: 30,
		},
		"the flag's window again: taken": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Window: d(5 * time.Second)},
			wantWindow: 5 * time.Second, wantBudget: 30,
		},
		"a shorter window loosens: refused, the flag's used": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Window: d(0)},
			wantWindow: 5 * time.Second, wantBudget: 30, refused: []Override{windowRefused("0s", "5s")},
		},
		"a shorter window with --allow-workload-overrides: taken": {
			window: 5 * time.Second, budget: 30, overrides: true, spec: dialect.Spec{Window: d(0)},
			wantWindow: 0, wantBudget: 30,
		},
		"a lower budget tightens: taken": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Budget: n(3)},
			wantWindow: 5 * time.Second, wantBudget: 3,
		},
		"the flag's budget again: taken": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Budget: n(30)},
			wantWindow: 5 * time.Second, wantBudget: 30,
		},
		"a higher budget loosens: refused": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Budget: n(31)},
			wantWindow: 5 * time.Second, wantBudget: 30, refused: []Override{budgetRefused("31", "30")},
		},
		"a budget of 0, no brake, is the loosest: refused": {
			window: 5 * time.Second, budget: 30, spec: dialect.Spec{Budget: n(0)},
			wantWindow: 5 * time.Second, wantBudget: 30, refused: []Override{budgetRefused("0", "30")},
		},
		"without a brake from the flag any budget tightens, 0 changes nothing": {
			window: 5 * time.Second, budget: 0, spec: dialect.Spec{Budget: n(0)},
			wantWindow: 5 * time.Second, wantBudget: 0,
		},
		"without a brake from the flag a budget is taken": {
			window: 5 * time.Second, budget: 0, spec: dialect.Spec{Budget: n(100)},
			wantWindow: 5 * time.Second, wantBudget: 100,
		},
		"a budget of 0 with --allow-workload-overrides: taken": {
			window: 5 * time.Second, budget: 30, overrides: true, spec: dialect.Spec{Budget: n(0)},
			wantWindow: 5 * time.Second, wantBudget: 0,
		},
		"both loosen: both refused, in that order": {
			window: time.Minute, budget: 2, spec: dialect.Spec{Window: d(time.Second), Budget: n(10)},
			wantWindow: time.Minute, wantBudget: 2, refused: []Override{windowRefused("1s", "1m0s"), budgetRefused("10", "2")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := Resolver{Window: tc.window, Pace: Pace{Budget: tc.budget, Overrides: tc.overrides}}
			window, budget, refused := r.Limits(tc.spec)
			g.Expect(window).To(Equal(tc.wantWindow))
			g.Expect(budget).To(Equal(tc.wantBudget))
			g.Expect(refused).To(Equal(tc.refused))
		})
	}
}

func TestWithin(t *testing.T) {
	w := func(s string) rollout.Schedule {
		win, err := maintenance.Parse(s)
		if err != nil {
			t.Fatalf("parsing %q: %v", s, err)
		}
		return win
	}
	day := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC) // a Monday
	at := func(days, hh, mm int) time.Time {
		return day.AddDate(0, 0, days).Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
	}
	tests := map[string]struct {
		schedules []rollout.Schedule
		now       time.Time
		open      bool
		next      time.Time
	}{
		"one window is itself": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h")}, now: at(0, 12, 0), next: at(1, 2, 0),
		},
		"overlapping windows open when the later opens": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h"), w("0 3 * * * 2h")}, now: at(0, 12, 0), next: at(1, 3, 0),
		},
		"inside both: open now": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h"), w("0 3 * * * 2h")}, now: at(0, 3, 30), open: true, next: at(0, 3, 30),
		},
		"inside the flag's only: closed until both are open": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h"), w("0 3 * * * 2h")}, now: at(0, 2, 30), next: at(0, 3, 0),
		},
		"inside the workload's only: closed, it opens nothing the flag keeps closed": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h"), w("0 3 * * * 2h")}, now: at(0, 4, 30), next: at(1, 3, 0),
		},
		"a narrower window on some days: the next day both are open": {
			schedules: []rollout.Schedule{w("0 2 * * * 2h"), w("0 2 * * 3 1h")}, now: at(0, 12, 0), next: at(2, 2, 0),
		},
		"three windows: the Namespace's narrows too": {
			schedules: []rollout.Schedule{w("0 0 * * * 12h"), w("0 6 * * * 12h"), w("0 10 * * 1-5 1h")}, now: at(0, 12, 0), next: at(1, 10, 0),
		},
		"windows never open together: the first, the flag's, holds alone": {
			schedules: []rollout.Schedule{w("0 2 * * * 1h"), w("0 14 * * * 1h")}, now: at(0, 12, 0), next: at(1, 2, 0),
		},
		"windows never open together, the first open now: it rolls now, never later than the flag allows": {
			schedules: []rollout.Schedule{w("0 2 * * * 1h"), w("0 14 * * * 1h")}, now: at(0, 2, 30), next: at(0, 2, 30),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := Within(tc.schedules...)
			g.Expect(s.Open(tc.now)).To(Equal(tc.open))
			g.Expect(s.Next(tc.now)).To(BeTemporally("==", tc.next))
		})
	}
}

// Resolver.Maintenance without Namespaces' windows: the flag's and the
// workload's narrow each other by default, the workload's replaces the
// flag's with --allow-workload-overrides.
func TestMaintenanceNarrows(t *testing.T) {
	w := func(s string) *maintenance.Window {
		win, err := maintenance.Parse(s)
		if err != nil {
			t.Fatalf("parsing %q: %v", s, err)
		}
		return &win
	}
	day := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	at := func(hh int) time.Time { return day.Add(time.Duration(hh) * time.Hour) }
	tests := map[string]struct {
		flag      *maintenance.Window // --maintenance-window; nil for none
		own       *maintenance.Window // the workload's; nil for none
		overrides bool
		openAt    []int // the hours of the day it is open at, of 0 to 23
	}{
		"none at all: no window":                         {},
		"the flag's alone":                               {flag: w("0 2 * * * 2h"), openAt: []int{2, 3}},
		"the workload's alone, with no flag's":           {own: w("0 12 * * * 2h"), openAt: []int{12, 13}},
		"both: open where both are":                      {flag: w("0 2 * * * 3h"), own: w("0 3 * * * 3h"), openAt: []int{3, 4}},
		"both disjoint: the flag's holds":                {flag: w("0 2 * * * 2h"), own: w("0 12 * * * 2h"), openAt: nil},
		"a malformed own window: the flag's still holds": {flag: w("0 2 * * * 2h"), own: &maintenance.Window{}, openAt: []int{2, 3}},
		"--allow-workload-overrides: the workload's replaces the flag's": {
			flag: w("0 2 * * * 2h"), own: w("0 12 * * * 2h"), overrides: true, openAt: []int{12, 13},
		},
		"--allow-workload-overrides and a malformed own window: none": {
			flag: w("0 2 * * * 2h"), own: &maintenance.Window{}, overrides: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := Resolver{Pace: Pace{Overrides: tc.overrides}}
			if tc.flag != nil {
				r.Pace.Maintenance = *tc.flag
			}
			s, err := r.Maintenance(t.Context(), "shop", dialect.Spec{Maintenance: tc.own})
			g.Expect(err).NotTo(HaveOccurred())
			if tc.flag == nil && tc.own == nil || tc.overrides && tc.own != nil && tc.own.IsZero() {
				g.Expect(s).To(BeNil(), "no window: always open")
				return
			}
			var open []int
			for h := range 24 {
				if s.Open(at(h)) {
					open = append(open, h)
				}
			}
			g.Expect(open).To(Equal(tc.openAt))
		})
	}
}
