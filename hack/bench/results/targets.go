package results

import (
	"fmt"
	"slices"
	"strings"
)

// steadyPhases are the phases after the controller's start in which it must
// not LIST: every lookup is a cache read. (sync and downtime hold starts.)
var steadyPhases = []string{"idle", "latency", "fanout", "burst", "noop", "coalesce", "binding-latency", "binding-fanout", "steady", "churn", "large", "kinds"}

// rolloutPhases are the phases whose rollouts count for the writes per
// rollout.
var rolloutPhases = []string{"latency", "fanout", "burst", "coalesce", "downtime"}

// Targets returns issue 6's targets (issue 21's for the scale run's memory)
// and whether res meets them; a target the run did not measure has Met nil.
func Targets(res *Run) []Target {
	var ts []Target
	add := func(name, target, value string, measured, met bool) {
		t := Target{Name: name, Target: target, Value: value}
		if measured {
			t.Met = &met
		}
		ts = append(ts, t)
	}
	if l := res.Latency; l != nil {
		add("change → rollout p99", "≤ 30 ms, no miss", fmt.Sprintf("%.1f ms, %d misses", l.Latency.P99, l.Misses), true, l.Latency.P99 <= 30 && l.Misses == 0)
		add("rollouts of other workloads (latency)", "0", fmt.Sprint(l.OtherRollouts), true, l.OtherRollouts == 0)
	}
	if f := res.FanOut; f != nil {
		add(fmt.Sprintf("fan-out: 1 ConfigMap → %d Deployments, all rolled", f.Workloads), "≤ 1.5 s", manyValue(f), true, f.AllSeconds != nil && *f.AllSeconds <= 1.5)
	}
	if b := res.Burst; b != nil {
		add(fmt.Sprintf("burst: %d Secrets at once, all rolled", b.Changes), "≤ 1.5 s", manyValue(b), true, b.AllSeconds != nil && *b.AllSeconds <= 1.5)
	}
	if i := res.Idle; i != nil {
		if res.Scale.ScaleRun {
			// Issue 21's: one replica holds 100,000 sources and 25,000
			// Deployments in 200 MiB, its start peaking at 250.
			add("idle RSS (scale run)", "≤ 200 MiB", fmt.Sprintf("%.1f MiB", i.RSSMiB), true, i.RSSMiB <= 200)
			add("peak RSS (scale run)", "≤ 250 MiB", fmt.Sprintf("%.1f MiB", i.PeakRSSMiB), true, i.PeakRSSMiB <= 250)
		} else {
			add("idle RSS", "≤ 50 MiB", fmt.Sprintf("%.1f MiB", i.RSSMiB), true, i.RSSMiB <= 50)
		}
	}
	if s := res.Sync; s != nil && res.Scale.ScaleRun {
		add("start → synced (scale run)", "≤ 60 s", OptSeconds(s.SyncedSeconds)+" s", true, s.SyncedSeconds != nil && *s.SyncedSeconds <= 60)
	}
	if bd := res.Bindings; bd != nil {
		add("Secret change → bound field p99", "≤ 50 ms, no miss", fmt.Sprintf("%.1f ms, %d misses", bd.Latency.P99, bd.Misses), true, bd.Latency.P99 <= 50 && bd.Misses == 0)
		if f := bd.FanOut; f.Workloads > 0 {
			add(fmt.Sprintf("1 Secret → %d bindings, all targets updated", f.Workloads), "≤ 2 s", manyValue(&f), true, f.AllSeconds != nil && *f.AllSeconds <= 2)
		}
	}
	lists, measured := 0, false
	writes, events, rollouts := 0, 0, 0
	for _, p := range res.Phases {
		if slices.Contains(steadyPhases, p.Name) {
			lists += p.Requests.Verb("list")
			measured = true
		}
		if slices.Contains(rolloutPhases, p.Name) {
			writes += p.Requests.Of("deployments", "patch", "update")
			events += p.Requests.Of("events", "create", "patch")
			rollouts += p.Rollouts
		}
	}
	add("LIST requests after start", "0", fmt.Sprint(lists), measured, lists == 0)
	if rollouts > 0 {
		add("writes per rolled workload", "1 write + its Event",
			fmt.Sprintf("%d writes + %d Event writes for %d rollouts", writes, events, rollouts), true, writes == rollouts && events <= rollouts)
	}
	if s := res.Sync; s != nil && res.Idle != nil {
		add(fmt.Sprintf("rollouts at first start over %d workloads", s.Workloads-1), "0", fmt.Sprint(s.FirstStartRollouts), true, s.FirstStartRollouts == 0)
	}
	if sh := res.Shards; sh != nil && len(sh.Shards) > 0 {
		// Issue 34's: every shard within 512 MiB of working set, at its
		// peak (what its memory limit must hold), and exactly once.
		largest, what := largestShardMemory(sh)
		add(fmt.Sprintf("largest %s of %d shards", what, len(sh.Shards)), "≤ 512 MiB", fmt.Sprintf("%.1f MiB", largest), true, largest <= 512)
		add("rollouts at the shards' start", "0", fmt.Sprint(sh.StartRollouts), true, sh.StartRollouts == 0)
		add(fmt.Sprintf("%d changes while the shards run: late / lost / other rollouts", sh.Changes), "0 / 0 / 0",
			fmt.Sprintf("%d / %d / %d", sh.Late, sh.Misses, sh.OtherRollouts), true, sh.Late == 0 && sh.Misses == 0 && sh.OtherRollouts == 0)
	}
	if n := res.NoOp; n != nil {
		add(fmt.Sprintf("rollouts from %d label-only changes", n.Changes), "0", fmt.Sprint(n.Rollouts), true, n.Rollouts == 0)
	}
	if c := res.Coalesce; c != nil {
		add(fmt.Sprintf("rollouts from %d changes %.0f ms apart", c.Changes, c.GapMS), "≤ 2", fmt.Sprint(c.Rollouts), true, c.Rollouts <= 2 && c.Rollouts >= 1)
	}
	if d := res.Downtime; d != nil {
		add("changes made while stopped, caught after start", fmt.Sprintf("%d/%d, nothing else rolled", d.Workloads, d.Workloads),
			fmt.Sprintf("%d/%d, %d other rollouts", d.Caught, d.Workloads, d.OtherRollouts), true, d.Caught == d.Workloads && d.OtherRollouts == 0)
	}
	for _, s := range []struct {
		name string
		res  *Steady
	}{{"steady stream", res.Steady}, {"steady stream, kill -9 and restart halfway", res.Restart}} {
		if s.res != nil {
			add(s.name+": missed / doubled", "0 / 0", fmt.Sprintf("%d / %d", s.res.Missed, s.res.Doubled), true, s.res.Missed == 0 && s.res.Doubled == 0)
		}
	}
	for _, r := range []*Random{res.Random, res.RandomRestart} {
		if r == nil {
			continue
		}
		c, f := r.Totals()
		runs := fmt.Sprintf("%d runs", len(r.Runs))
		if len(r.Runs) == 1 {
			runs = "1 run"
		}
		add(fmt.Sprintf("random stream, %s, %s: doubled / without update / missed", r, runs), "0 / 0 / 0",
			fmt.Sprintf("%d / %d / %d (floor %d / %d / %d)", c[0], c[1], c[2], f[0], f[1], f[2]), true, c == [3]int{})
	}
	if v := res.Versus; v != nil && len(v.Controller.RestartGapSeconds) > 0 {
		c := v.Controller
		add("steady streams of the floor scenario, every round: missed / doubled", "0 / 0",
			fmt.Sprintf("%d / %d", c.SteadyMissed, c.SteadyDoubled), true, c.SteadyMissed == 0 && c.SteadyDoubled == 0)
		add("the same, killed and restarted halfway: missed / doubled", "0 / 0",
			fmt.Sprintf("%d / %d", c.RestartMissed, c.RestartDoubled), true, c.RestartMissed == 0 && c.RestartDoubled == 0)
	}
	if c := res.Churn; c != nil {
		add("churn: every Deployment alive at a change rolled, once", "0 missed / 0 doubled", fmt.Sprintf("%d / %d of %d", c.Missed, c.Doubled, c.Expected),
			true, c.Missed == 0 && c.Doubled == 0)
	}
	if l := res.Large; l != nil {
		add(fmt.Sprintf("large sources (%.0f KiB): missed / doubled", float64(l.Bytes)/1024), "0 / 0", fmt.Sprintf("%d / %d of %d", l.Missed, l.Doubled, l.Changes), true, l.Missed == 0 && l.Doubled == 0)
	}
	if k := res.Kinds; k != nil {
		var got []string
		for _, r := range k.Kinds {
			got = append(got, fmt.Sprintf("%s %d", r.Kind, r.Rollouts))
		}
		add("every kind: one change, one rollout (a Job: none)", "as expected", strings.Join(got, ", "), true, k.Met())
	}
	return ts
}

func manyValue(m *Many) string {
	if m.AllSeconds != nil {
		return fmt.Sprintf("%.3f s", *m.AllSeconds)
	}
	return fmt.Sprintf("%d of %d rolled (missed)", m.Rolled, m.Workloads)
}

// OptSeconds returns *s to the millisecond, or "—" when s is nil.
func OptSeconds(s *float64) string {
	if s == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *s)
}
