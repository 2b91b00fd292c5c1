package eviction_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/eviction"
)

func TestPlanOf(t *testing.T) {
	change := time.Date(2026, 11, 29, 7, 0, 0, 300_000_000, time.UTC) // 07:00:00.3
	before, after := change.Add(-time.Hour).Truncate(time.Second), change.Add(2*time.Second).Truncate(time.Second)
	now := change.Add(10 * time.Second)
	pod := func(name string, created time.Time, ready bool) eviction.Pod {
		return eviction.Pod{Name: name, Created: created, Ready: ready}
	}
	names := func(ps []eviction.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	tests := map[string]struct {
		in    eviction.Input
		step  eviction.Step
		evict []string
		after time.Duration
	}{
		"three pods from before the change: the oldest is evicted, one at a time": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-1", before.Add(time.Second), true), pod("web-0", before, true), pod("web-2", before.Add(2*time.Second), true)},
				Progress: eviction.Progress{Since: change}, Want: 3, Now: now},
			step: eviction.Evict, evict: []string{"web-0"},
		},
		"max-unavailable 2 evicts two at once": {
			in: eviction.Input{Pods: []eviction.Pod{pod("a", before, true), pod("b", before, true), pod("c", before, true)},
				Progress: eviction.Progress{Since: change}, Want: 3, MaxUnavailable: 2, Now: now},
			step: eviction.Evict, evict: []string{"a", "b"},
		},
		"a pod evicted and not yet re-created makes the next wait": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-1", before, true), pod("web-2", before, true)},
				Progress: eviction.Progress{Since: change, Evicted: now.Add(-time.Second)}, Want: 3, Now: now, Timeout: time.Minute},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"a replacement not Ready yet makes the next wait": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, false), pod("web-1", before, true), pod("web-2", before, true)},
				Progress: eviction.Progress{Since: change, Evicted: now.Add(-time.Second)}, Want: 3, Now: now},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"a pod on its way out counts as unavailable and as not done": {
			in: eviction.Input{Pods: []eviction.Pod{{Name: "web-0", Created: before, Ready: true, Deleting: true}, pod("web-1", before, true)},
				Progress: eviction.Progress{Since: change}, Want: 2, Now: now},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"once the replacement is Ready, the next pod is evicted": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, true), pod("web-1", before, true), pod("web-2", before, true)},
				Progress: eviction.Progress{Since: change, Evicted: now.Add(-time.Second)}, Want: 3, Now: now},
			step: eviction.Evict, evict: []string{"web-1"},
		},
		"nothing is evicted before the owner's controller has observed the change": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", before, true)},
				Progress: eviction.Progress{Since: change}, Want: 1, Now: now, Unobserved: true},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"a pod started after the change is never evicted": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, true), pod("web-1", after, true)},
				Progress: eviction.Progress{Since: change}, Want: 2, Now: now},
			step: eviction.Done,
		},
		"a pod created in the change's own second is counted as before it: none is left from before": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", change.Truncate(time.Second), true)},
				Progress: eviction.Progress{Since: change}, Want: 1, Now: now},
			step: eviction.Evict, evict: []string{"web-0"},
		},
		"nothing is evicted before the second after the change": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", before, true)},
				Progress: eviction.Progress{Since: change}, Want: 1, Now: change.Add(100 * time.Millisecond)},
			step: eviction.Wait, after: 600 * time.Millisecond,
		},
		"an unavailable pod from before is evicted whatever the room, then the available ones as the room allows": {
			in: eviction.Input{Pods: []eviction.Pod{pod("a", before, true), pod("b", before.Add(time.Second), false), pod("c", before, true)},
				Progress: eviction.Progress{Since: change}, Want: 3, MaxUnavailable: 2, Now: now},
			step: eviction.Evict, evict: []string{"b", "a"},
		},
		"a replacement not Ready within the timeout after the last eviction: stuck": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, false), pod("web-1", before, true)},
				Progress: eviction.Progress{Since: change, Evicted: now.Add(-2 * time.Minute)}, Want: 2, Now: now, Timeout: time.Minute},
			step: eviction.Stuck,
		},
		"the wait before the timeout ends looks again when it ends": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, false), pod("web-1", before, true)},
				Progress: eviction.Progress{Since: change, Evicted: now.Add(-58 * time.Second)}, Want: 2, Now: now, Timeout: time.Minute},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"without the owner's count, the count at the restart's start is restored": {
			in: eviction.Input{Pods: []eviction.Pod{pod("x-2", before, true)},
				Progress: eviction.Progress{Since: change, Pods: 2, Evicted: now.Add(-time.Second)}, Now: now},
			step: eviction.Wait, after: 2 * time.Second,
		},
		"without any count, the pods seen are the count": {
			in:   eviction.Input{Pods: []eviction.Pod{pod("x-1", before, true), pod("x-2", before, true)}, Progress: eviction.Progress{Since: change}, Now: now},
			step: eviction.Evict, evict: []string{"x-1"},
		},
		"a change folded into the restart: a pod replaced for the first change predates the second and is evicted once more": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, true), pod("web-1", before, true)},
				Progress: eviction.Progress{Since: after.Add(time.Minute)}, Want: 2, Now: after.Add(2 * time.Minute)},
			step: eviction.Evict, evict: []string{"web-1"},
		},
		"no pods and none wanted: done": {
			in:   eviction.Input{Progress: eviction.Progress{Since: change}, Now: now},
			step: eviction.Done,
		},
		"every pod new but one not Ready: not done": {
			in: eviction.Input{Pods: []eviction.Pod{pod("web-0", after, true), pod("web-1", after, false)},
				Progress: eviction.Progress{Since: change, Evicted: now}, Want: 2, Now: now},
			step: eviction.Wait, after: 2 * time.Second,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := eviction.PlanOf(tc.in)
			g.Expect(p.Step).To(Equal(tc.step), "step")
			g.Expect(names(p.Evict)).To(Equal(tc.evict), "evicted")
			g.Expect(p.After).To(Equal(tc.after), "after")
		})
	}
}

// TestPlanUnfinished: nudge_unfinished_restarts once a plan is carried out
// is false once Done, true once Stuck (halted), and what was observed
// before otherwise.
func TestPlanUnfinished(t *testing.T) {
	for _, tc := range []struct {
		step           eviction.Step
		observed, want bool
	}{
		{eviction.Done, true, false},
		{eviction.Done, false, false},
		{eviction.Stuck, false, true},
		{eviction.Stuck, true, true},
		{eviction.Evict, true, true},
		{eviction.Evict, false, false},
		{eviction.Wait, true, true},
		{eviction.Wait, false, false},
	} {
		if got := (eviction.Plan{Step: tc.step}).Unfinished(tc.observed); got != tc.want {
			t.Errorf("step %v, observed %v: Unfinished = %v, want %v", tc.step, tc.observed, got, tc.want)
		}
	}
}
