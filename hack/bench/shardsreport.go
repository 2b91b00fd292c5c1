package main

import (
	"fmt"
	"strings"
)

// shardsMarkdown renders the shards scenario as a table of one row per
// shard (the single controller's first, when it ran), in MiB and seconds
// from each process's start.
func shardsMarkdown(sh *ShardsResult) string {
	var b strings.Builder
	b.WriteString("\nThe shards, each process's memory sampled every second over its window once quiet (maximum, median); working set as the kubelet computes it (-cgroup); seconds from its start:\n\n")
	b.WriteString("| shard | namespaces | workloads | ready in | baselined in | idle working set | peak working set | idle RSS (anonymous) | peak RSS | CPU s | received MiB |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, f ShardFigures) {
		ws := "—"
		if w := f.Memory.WorkingSet; w != nil {
			ws = fmt.Sprintf("%.1f (%.1f)", w.Max, w.Median)
		}
		peakWS := "—"
		if f.PeakWorkingSetMiB != nil {
			peakWS = fmt.Sprintf("%.1f", *f.PeakWorkingSetMiB)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %.1f (%.1f) | %.1f | %.1f | %.1f |\n", name, f.Namespaces, f.Workloads,
			optSeconds(f.ReadySeconds), optSeconds(f.BaselinedSeconds), ws, peakWS, f.RSSMiB, f.Memory.Anon.Max, f.PeakRSSMiB, f.CPUSeconds, f.ReceivedMiB)
	}
	if !sh.ShardsOnly {
		row("single", sh.Single)
	}
	for _, f := range sh.Shards {
		row(f.Shard, f)
	}
	return b.String()
}

// planeMarkdown renders the plane's memory and what the run left on disk.
func planeMarkdown(p *PlaneResult) string {
	var b strings.Builder
	b.WriteString("\nThe plane (RSS in MiB; idle is the shards' window, maximum and median):\n\n")
	b.WriteString("| process | once populated (anonymous) | populate's peak | shards' start: peak | idle | peak since start | live heap |\n|---|---|---|---|---|---|---|\n")
	for _, name := range planeProcNames {
		f := p.process(name)
		startPeak, idle, live := "—", "—", "—"
		if f.StartPeakMiB != nil {
			startPeak = fmt.Sprintf("%.1f", *f.StartPeakMiB)
		}
		if f.Idle != nil {
			idle = fmt.Sprintf("%.1f (%.1f)", f.Idle.RSS.Max, f.Idle.RSS.Median)
		}
		if f.LiveHeapMiB != nil || f.PeakLiveHeapMiB != nil {
			live = fmt.Sprintf("%s once populated, %s at most, %s at idle", optFloat(f.PopulatedLiveHeapMiB), optFloat(f.PeakLiveHeapMiB), optFloat(f.LiveHeapMiB))
		}
		fmt.Fprintf(&b, "| %s | %.1f (%.1f) | %.1f | %s | %s | %.1f | %s |\n", name, f.PopulatedRSSMiB, f.PopulatedAnonMiB, f.PopulatePeakMiB, startPeak, idle, f.PeakRSSMiB, live)
	}
	env := "the Go defaults (GOGC=100, no memory limit)"
	if len(p.Env) > 0 {
		env = strings.Join(p.Env, " ")
	}
	fmt.Fprintf(&b, "\nEvery process ran with %s. The live heap is what kube-apiserver's last collection marked (go_gc_heap_live_bytes), read every 30 s, and at idle after a forced one.\n", env)
	fmt.Fprintf(&b, "\netcd's database %.1f MiB (%.1f in use) of a %.0f MiB quota; audit log %.1f MiB; %.1f GiB free on disk at the end.\n",
		p.EtcdDBMiB, p.EtcdDBInUseMiB, p.EtcdQuotaMiB, p.AuditLogMiB, p.DiskFreeGiB)
	return b.String()
}

// optFloat returns *v to a decimal, or "—" when v is nil.
func optFloat(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f", *v)
}

// largestShardMemory returns the largest peak working set of the shards
// and "peak working set", or, when they ran in no cgroup, the largest peak
// RSS and "peak RSS"; 0 without shards.
func largestShardMemory(sh *ShardsResult) (float64, string) {
	largest, what := 0.0, "peak RSS"
	for _, f := range sh.Shards {
		v := f.PeakRSSMiB
		if f.PeakWorkingSetMiB != nil {
			v, what = *f.PeakWorkingSetMiB, "peak working set"
		}
		largest = max(largest, v)
	}
	return largest, what
}
