package results

import (
	"fmt"
	"strings"

	"nudge.dev/nudge/hack/bench/plane"
)

// figure is one line of the report: a scenario, what is measured, the value,
// and the load when the scenario began.
type figure struct {
	scenario, name, value string
	load                  *Load
}

// figures returns the figures of res in report order.
func figures(res *Run) []figure {
	var fs []figure
	add := func(scenario, name string, load *Load, format string, args ...any) {
		fs = append(fs, figure{scenario, name, fmt.Sprintf(format, args...), load})
	}
	if s := res.Sync; s != nil {
		add("sync", "ready / probe rolled / all baselined / synced (s from start)", &s.Load, "%s / %s / %s / %s",
			OptSeconds(s.ReadySeconds), OptSeconds(s.ProbeRolledSeconds), OptSeconds(s.AllBaselinedSeconds), OptSeconds(s.SyncedSeconds))
		add("sync", "first-sight writes (baselines)", &s.Load, "%d of %d workloads", s.BaselinesWritten, s.Workloads)
		add("sync", "rollouts at first start", &s.Load, "%d", s.FirstStartRollouts)
	}
	if i := res.Idle; i != nil {
		add("idle", "RSS (anonymous) / peak RSS", &i.Load, "%.1f (%.1f) / %.1f MiB", i.RSSMiB, i.AnonRSSMiB, i.PeakRSSMiB)
		if i.WorkingSetMiB != nil {
			add("idle", "cgroup working set (active file pages) / peak working set", &i.Load, "%.1f (%.1f) / %.1f MiB", *i.WorkingSetMiB, *i.ActiveFileMiB, *i.PeakWorkingSetMiB)
		}
		add("idle", "CPU since start / during idle", &i.Load, "%.2f / %.2f s (%.0f s idle)", i.CPUSeconds, i.IdleCPUSeconds, i.Seconds)
	}
	for i, r := range res.Restarts {
		add(fmt.Sprintf("restart %d", i+1), r.Name+": synced (probe) / RSS (anonymous) / peak RSS", &r.Load, "%s s / %.1f (%.1f) / %.1f MiB%s",
			OptSeconds(r.SyncedSeconds), r.RSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.WorkingSet())
	}
	if l := res.Latency; l != nil {
		add("latency", fmt.Sprintf("%d changes: p50 / p90 / p99 / max", l.Changes), &l.Load, "%.1f / %.1f / %.1f / %.1f ms",
			l.Latency.P50, l.Latency.P90, l.Latency.P99, l.Latency.Max)
		add("latency", "misses / rollouts of other workloads", &l.Load, "%d / %d", l.Misses, l.OtherRollouts)
		add("latency", "the benchmark's patch round trip p50 / p99", &l.Load, "%.1f / %.1f ms", l.PatchRTT.P50, l.PatchRTT.P99)
	}
	many := func(scenario, what string, m *Many) {
		if m == nil {
			return
		}
		add(scenario, what+": all rolled (first / p50)", &m.Load, "%s s (%s / %s s), %d misses",
			OptSeconds(m.AllSeconds), OptSeconds(m.FirstSeconds), OptSeconds(m.P50Seconds), m.Misses)
		add(scenario, "changes sent in / rollouts of other workloads", &m.Load, "%.3f s / %d", m.SentSeconds, m.OtherRollouts)
	}
	if f := res.FanOut; f != nil {
		many("fanout", fmt.Sprintf("1 ConfigMap → %d Deployments", f.Workloads), f)
	}
	if b := res.Burst; b != nil {
		many("burst", fmt.Sprintf("%d Secrets at once", b.Changes), b)
	}
	if n := res.NoOp; n != nil {
		add("noop", fmt.Sprintf("rollouts from %d label-only changes", n.Changes), &n.Load, "%d", n.Rollouts)
	}
	if c := res.Coalesce; c != nil {
		add("coalesce", fmt.Sprintf("rollouts from %d changes %.0f ms apart (s after the first)", c.Changes, c.GapMS), &c.Load, "%d (%s)", c.Rollouts, floats(c.RolloutSeconds))
	}
	if d := res.Downtime; d != nil {
		add("downtime", fmt.Sprintf("%d changes while stopped: caught / all caught after restart", d.Changes), &d.Load, "%d/%d / %s s", d.Caught, d.Workloads, OptSeconds(d.AllSeconds))
		add("downtime", "ready after restart / rollouts of other workloads", &d.Load, "%s s / %d", OptSeconds(d.ReadySeconds), d.OtherRollouts)
	}
	if bd := res.Bindings; bd != nil {
		add("bindings", fmt.Sprintf("%d bindings applied after creation", bd.Bindings), &bd.Load, "%s s", OptSeconds(bd.SetupSeconds))
		add("bindings", fmt.Sprintf("%d Secret changes → bound field: p50 / p90 / p99 / max", bd.Changes), &bd.Load, "%.1f / %.1f / %.1f / %.1f ms (%d misses)",
			bd.Latency.P50, bd.Latency.P90, bd.Latency.P99, bd.Latency.Max, bd.Misses)
		if f := bd.FanOut; f.Workloads > 0 {
			add("bindings", fmt.Sprintf("1 Secret → %d bound Harbors: all updated (first / p50)", f.Workloads), &f.Load, "%s s (%s / %s s), %d misses",
				OptSeconds(f.AllSeconds), OptSeconds(f.FirstSeconds), OptSeconds(f.P50Seconds), f.Misses)
		}
		add("bindings", "every binding's status recorded: after creation / after the fan-out's change", &bd.Load, "%s / %s s",
			OptSeconds(bd.SetupStatusSeconds), OptSeconds(bd.FanOutStatusSeconds))
	}
	if sh := res.Shards; sh != nil {
		if !sh.ShardsOnly {
			add("shards", "single controller: RSS / received from the API server", &sh.Load, "%.1f MiB / %.1f MiB", sh.Single.RSSMiB, sh.Single.ReceivedMiB)
		}
		for _, f := range sh.Shards {
			add("shards", fmt.Sprintf("shard %s (%d namespaces): ready / RSS / received", f.Shard, f.Namespaces), &sh.Load, "%s s / %.1f MiB / %.1f MiB",
				OptSeconds(f.ReadySeconds), f.RSSMiB, f.ReceivedMiB)
		}
		if !sh.ShardsOnly {
			add("shards", "largest shard over the single controller: RSS / received", &sh.Load, "%.2f× / %.2f× (ShardedListAndWatch %s)", sh.MaxRSSRatio, sh.MaxBytesRatio, map[bool]string{true: "on", false: "off"}[sh.Gate])
		}
		add("shards", "workloads baselined (all, s from the first shard's start)", &sh.Load, "%d of %d (%s s)", sh.Baselined, sh.Workloads, OptSeconds(sh.BaselinedSeconds))
		add("shards", "quiet after the last shard was ready (first reconciles done)", &sh.Load, "%.1f s", sh.QuietSeconds)
		add("shards", "rollouts at the shards' start", &sh.Load, "%d", sh.StartRollouts)
		add("shards", fmt.Sprintf("%d changes: late / misses / other rollouts", sh.Changes), &sh.Load, "%d / %d / %d", sh.Late, sh.Misses, sh.OtherRollouts)
	}
	if p := res.Plane; p != nil {
		for _, name := range plane.ProcNames {
			f := p.Process(name)
			add("plane", name+": RSS once populated / peak since start", nil, "%.1f / %.1f MiB", f.PopulatedRSSMiB, f.PeakRSSMiB)
		}
		add("plane", "etcd's database (in use) / audit log", nil, "%.1f (%.1f) / %.1f MiB", p.EtcdDBMiB, p.EtcdDBInUseMiB, p.AuditLogMiB)
	}
	steady := func(scenario string, s *Steady) {
		if s == nil {
			return
		}
		add(scenario, s.String()+": change → rollout p50 / p99 / max", &s.Load, "%.1f / %.1f / %.1f ms", s.Latency.P50, s.Latency.P99, s.Latency.Max)
		add(scenario, "changes: missed / doubled", &s.Load, "%d: %d / %d", s.Changes, s.Missed, s.Doubled)
		add(scenario, "longest time with no rollout", &s.Load, "%.3f s", s.GapSeconds)
		add(scenario, "controller CPU / API requests per update", &s.Load, "%.2f ms / %.3f", s.CPUPerUpdate, s.RequestsPerUpdate)
	}
	steady("steady", res.Steady)
	if c := res.Churn; c != nil {
		add("churn", fmt.Sprintf("%d Deployments (one every %.0f ms, each for %.0f ms), %d changes every %.0f ms: expected / seen rollouts",
			c.Deployments, c.EveryMS, c.LifeMS, c.Changes, c.ChangeMS), &c.Load, "%d / %d", c.Expected, c.Seen)
		add("churn", "missed / doubled", &c.Load, "%d / %d", c.Missed, c.Doubled)
		add("churn", "controller CPU / API requests per update", &c.Load, "%.2f ms / %.3f", c.CPUPerUpdate, c.RequestsPerUpdate)
	}
	steady("restart", res.Restart)
	randomFigures(add, "random", res.Random)
	randomFigures(add, "random-restart", res.RandomRestart)
	if l := res.Large; l != nil {
		add("large", l.String()+": change → rollout p50 / p99 / max", &l.Load, "%.1f / %.1f / %.1f ms", l.Latency.P50, l.Latency.P99, l.Latency.Max)
		add("large", "changes: missed / doubled", &l.Load, "%d: %d / %d", l.Changes, l.Missed, l.Doubled)
		add("large", "controller CPU / API requests per update", &l.Load, "%.2f ms / %.3f", l.CPUPerUpdate, l.RequestsPerUpdate)
		add("large", "controller RSS before / after (peak since start)", &l.Load, "%.1f / %.1f (%.1f) MiB", l.RSSBeforeMiB, l.RSSAfterMiB, l.PeakRSSMiB)
	}
	if k := res.Kinds; k != nil {
		for _, r := range k.Kinds {
			lat := "—"
			if r.LatencyMS != nil {
				lat = fmt.Sprintf("%.1f ms", *r.LatencyMS)
			}
			add("kinds", r.Kind+": rollouts from one change (expected) / change → first rollout", &k.Load, "%d (%d) / %s", r.Rollouts, r.Expected, lat)
		}
		add("kinds", "controller CPU / API requests per update", &k.Load, "%.2f ms / %.3f", k.CPUPerUpdate, k.RequestsPerUpdate)
	}
	if p := res.Process; p != nil {
		add("end", "RSS / peak RSS / CPU of the first process at its end", nil, "%.1f / %.1f MiB / %.2f s", p.RSSMiB, p.PeakRSSMiB, p.CPUSeconds)
	}
	return fs
}

// randomFigures adds the figures of a random scenario: each run's, the
// controller's and the floor's.
func randomFigures(add func(scenario, name string, load *Load, format string, args ...any), scenario string, r *Random) {
	if r == nil {
		return
	}
	for i, run := range r.Runs {
		for _, s := range []struct {
			who  string
			side RandomSide
		}{{"", run.Controller}, {", floor", run.Floor}} {
			what, first := fmt.Sprintf("run %d%s", i+1, s.who), ""
			if i == 0 && s.who == "" {
				first = r.String() + ": "
			}
			d := s.side
			add(scenario, fmt.Sprintf("%s%s (seed %d): updates (< 1 s after the previous of their ConfigMap) / rollouts", first, what, run.Seed), &d.Load, "%d (%d) / %d", d.Updates, d.Close, d.Rollouts)
			add(scenario, what+": doubled / without update / missed", &d.Load, "%d / %d / %d", d.Doubled, d.WithoutUpdate, d.Missed)
			add(scenario, what+": rollouts of the same content as the one before (of those with a trigger hash)", &d.Load, "%d (%d)", d.SameContent, d.Hashed)
			add(scenario, what+": update → rollout p50 / p99 / max (rolled before the next update)", &d.Load, "%.1f / %.1f / %.1f ms (%d)", d.Latency.P50, d.Latency.P99, d.Latency.Max, d.Latency.N)
			add(scenario, what+": CPU / API requests per update", &d.Load, "%.2f ms / %.3f", d.CPUPerUpdate, d.RequestsPerUpdate)
		}
	}
}

// Markdown renders one run.
func Markdown(res *Run) string {
	var b strings.Builder
	m := res.Machine
	fmt.Fprintf(&b, "## %s, %s\n\n", res.Controller, res.Started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), %.1f GiB, Linux %s, %s; load %s at start, %s at end\n",
		m.CPUs, m.CPUModel, float64(m.MemoryMiB)/1024, m.Kernel, m.Go, m.LoadStart, m.LoadEnd)
	fmt.Fprintf(&b, "- command: `%s`\n", res.Command)
	fmt.Fprintf(&b, "- controller: `%s`", res.ControllerCmd)
	if res.Binary != "" {
		fmt.Fprintf(&b, " (%s)", res.Binary)
	}
	if res.Revision != "" {
		fmt.Fprintf(&b, ", tree %s", res.Revision)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- population: %s; created in %.1f s; run %.0f s\n\n", population(res), res.Population.Seconds, res.Seconds)
	b.WriteString("| scenario | figure | value | load at start |\n|---|---|---|---|\n")
	for _, f := range figures(res) {
		load := ""
		if f.load != nil {
			load = f.load.String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.scenario, f.name, f.value, load)
	}
	b.WriteString("\n| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range res.Targets {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Target, t.Value, met(t.Met))
	}
	if res.Versus != nil {
		b.WriteString(VersusMarkdown(res.Versus, res.Controller))
	}
	if res.Shards != nil {
		b.WriteString(shardsMarkdown(res.Shards))
	}
	if res.Plane != nil {
		b.WriteString(planeMarkdown(res.Plane))
	}
	b.WriteString("\nThe controller's API requests (audit log, its own identity), by phase:\n\n")
	b.WriteString("| phase | s | load at start | controller CPU s | rollouts | writes / Events per rollout | requests | watches closed by the API server |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range res.Phases {
		per := "—"
		if p.Rollouts > 0 {
			per = fmt.Sprintf("%.2f / %.2f", p.WritesPerRollout, p.EventsPerRollout)
		}
		closed := "none"
		if len(p.TerminatedWatchers) > 0 {
			closed = p.TerminatedWatchers.Resources()
		}
		if p.BenchWatchRestarts > 0 {
			closed += fmt.Sprintf(" (the benchmark's restarted %d)", p.BenchWatchRestarts)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %.2f | %d | %s | %s | %s |\n", p.Name, p.To.Sub(p.From).Seconds(), p.Load, p.CPUSeconds, p.Rollouts, per, p.Requests, closed)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}

// Compare renders several runs side by side, one column each.
func Compare(runs []*Run) string {
	var b strings.Builder
	b.WriteString("| scenario | figure |")
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.Controller)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(runs)) + "\n")
	type key struct{ scenario, name string }
	order := []key{{"run", "load at start → end (1, 5, 15 min)"}}
	values := map[key][]string{order[0]: make([]string, len(runs))}
	for i, r := range runs {
		values[order[0]][i] = r.Machine.LoadStart.String() + " → " + r.Machine.LoadEnd.String()
		for _, f := range figures(r) {
			k := key{f.scenario, f.name}
			if _, ok := values[k]; !ok {
				order = append(order, k)
				values[k] = make([]string, len(runs))
			}
			values[k][i] = f.value
		}
		for _, p := range r.Phases {
			k := key{"requests", p.Name}
			if _, ok := values[k]; !ok {
				order = append(order, k)
				values[k] = make([]string, len(runs))
			}
			values[k][i] = p.Requests.String()
		}
	}
	for _, k := range order {
		fmt.Fprintf(&b, "| %s | %s |", k.scenario, k.name)
		for _, v := range values[k] {
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "- %s: `%s`, load %s → %s, population %s\n", r.Controller, r.Command, r.Machine.LoadStart, r.Machine.LoadEnd, population(r))
	}
	return b.String()
}

func population(res *Run) string {
	s := res.Scale
	out := fmt.Sprintf("%d namespaces × (%d Secrets + %d ConfigMaps of %d bytes in %d keys), %d Deployments using 2 of each",
		s.Namespaces, s.Secrets, s.ConfigMaps, s.SourceBytes, s.Keys, s.Deployments)
	if s.FanOut > 0 {
		out += fmt.Sprintf(", %d fan-out Deployments sharing 1 ConfigMap", s.FanOut)
	}
	return out + ", 1 probe"
}

func met(m *bool) string {
	switch {
	case m == nil:
		return "not measured"
	case *m:
		return "yes"
	default:
		return "**no**"
	}
}

func floats(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%.3f", f)
	}
	return strings.Join(parts, ", ")
}
