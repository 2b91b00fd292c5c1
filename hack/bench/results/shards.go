package results

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/plane"
	"nudge.dev/nudge/hack/bench/process"
	"nudge.dev/nudge/hack/bench/stats"
)

// Shards is the shards scenario (-shards N): the single controller's
// idle figures, then N controllers over the same cluster, each with
// --shard set to one of N ranges cut at the population namespaces' hash
// quantiles (shard.Balanced: the bench's namespaces, bench-000, bench-001,
// ..., differ in their last characters alone, which equal ranges split
// unevenly), and a round of changes each rolled exactly once. With
// -shards-only the shards start on the freshly populated cluster instead,
// and write the first-sight baselines themselves.
type Shards struct {
	Load Load `json:"load"`
	// Gate says whether kube-apiserver ran with ShardedListAndWatch.
	Gate bool `json:"gate"`
	// ShardsOnly says the single controller did not run first
	// (-shards-only): Single and the ratios are then zero.
	ShardsOnly bool `json:"shards_only,omitempty"`
	// Single is the unsharded controller, measured as the shards are: its
	// memory over a window of -memory-window once quiet and idle, and the
	// bytes it received from the API server until the end of its idle
	// phase (through the benchmark's counting proxy).
	Single ShardFigures   `json:"single"`
	Shards []ShardFigures `json:"shards"`
	// MaxRSSRatio is the largest shard's RSS over the single controller's,
	// each the maximum of its window (MedianRSSRatio the same of the
	// medians, MaxAnonRatio of the anonymous parts' maxima); MaxBytesRatio
	// is the same of the bytes received.
	MaxRSSRatio    float64 `json:"max_rss_ratio"`
	MedianRSSRatio float64 `json:"median_rss_ratio"`
	MaxAnonRatio   float64 `json:"max_anon_ratio"`
	MaxBytesRatio  float64 `json:"max_bytes_ratio"`
	// QuietSeconds is the time from the last shard ready until every
	// shard's CPU was quiet (its first reconcile of every workload done).
	QuietSeconds float64 `json:"quiet_seconds"`
	// Workloads are the cluster's Deployments (the probe's and the
	// fan-out's included) and Baselined those carrying the baseline
	// annotation once the shards were ready; with -shards-only,
	// BaselinedSeconds is the time from the first shard's start until
	// the last of them was seen with it.
	Workloads        int      `json:"workloads"`
	Baselined        int      `json:"baselined"`
	BaselinedSeconds *float64 `json:"baselined_seconds,omitempty"`
	// StartRollouts are the rollouts of any Deployment but the probe from
	// the first shard's start until the changes: there must be none (a
	// first-sight baseline is a write, not a rollout).
	StartRollouts int `json:"start_rollouts"`
	Changes       int `json:"changes"`
	// Late are Deployments using a changed source that did not roll within
	// -change-timeout; Misses those that did not roll within -wait-timeout.
	Late          int `json:"late"`
	Misses        int `json:"misses"`
	OtherRollouts int `json:"other_rollouts"` // a second rollout of such a Deployment, or one of another
}

// ShardFigures are one controller's figures in the shards scenario.
type ShardFigures struct {
	Shard      string `json:"shard,omitempty"`     // its --shard range
	Namespaces int    `json:"namespaces"`          // population namespaces it owns
	Workloads  int    `json:"workloads,omitempty"` // Deployments in the namespaces it owns
	// ReadySeconds is the time from its start until its /readyz answered
	// 200 (caches synced); BaselinedSeconds until the last workload of
	// its namespaces carried the baseline annotation, when it wrote them
	// (-shards-only).
	ReadySeconds     *float64 `json:"ready_seconds,omitempty"`
	BaselinedSeconds *float64 `json:"baselined_seconds,omitempty"`
	// RSSMiB is the maximum of Memory's RSS samples; PeakRSSMiB the peak
	// since start (VmHWM) at the window's end.
	RSSMiB     float64 `json:"rss_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// PeakWorkingSetMiB is the largest working set of its memory cgroup
	// (-cgroup) sampled every 250 ms from its start to the window's end;
	// its idle working set is Memory.WorkingSet. Nil without -cgroup.
	PeakWorkingSetMiB *float64             `json:"peak_working_set_mib,omitempty"`
	CPUSeconds        float64              `json:"cpu_seconds"` // from its start to the window's end
	Memory            process.MemoryWindow `json:"memory"`
	ReceivedMiB       float64              `json:"received_mib"` // from the API server, start to idle end
}

// shardsMarkdown renders the shards scenario as a table of one row per
// shard (the single controller's first, when it ran), in MiB and seconds
// from each process's start.
func shardsMarkdown(sh *Shards) string {
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
			OptSeconds(f.ReadySeconds), OptSeconds(f.BaselinedSeconds), ws, peakWS, f.RSSMiB, f.Memory.Anon.Max, f.PeakRSSMiB, f.CPUSeconds, f.ReceivedMiB)
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
func planeMarkdown(p *plane.Result) string {
	var b strings.Builder
	b.WriteString("\nThe plane (RSS in MiB; idle is the shards' window, maximum and median):\n\n")
	b.WriteString("| process | once populated (anonymous) | populate's peak | shards' start: peak | idle | peak since start | live heap |\n|---|---|---|---|---|---|---|\n")
	for _, name := range plane.ProcNames {
		f := p.Process(name)
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
func largestShardMemory(sh *Shards) (float64, string) {
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

// Measure sets f's memory and CPU figures from its window w and its stats
// s at the window's end.
func (f *ShardFigures) Measure(w process.MemoryWindow, s process.Stats) {
	f.Memory, f.RSSMiB, f.PeakRSSMiB, f.CPUSeconds = w, w.RSS.Max, stats.MiB(s.PeakBytes), stats.Round(s.CPUSeconds, 2)
	if s.Cgroup != nil {
		f.PeakWorkingSetMiB = ptr.To(stats.MiB(s.PeakWorkingSetBytes))
	}
}
