package process

import (
	"context"
	"fmt"
	"slices"
	"time"

	"nudge.dev/nudge/hack/bench/stats"
)

// MemoryWindow is one process's memory sampled every second over a window
// that starts once it is quiet, in MiB: RSS, and its anonymous (heap,
// stacks) and file-backed (the mapped binary) parts, each summarised
// alone. The window is longer than anything an idle nudge does
// periodically (the discovery poll was every 30 s), so its maximum holds
// whatever an idle process maps back: the figure a memory limit must hold.
// WorkingSet is its memory cgroup's working set (usage minus inactive file
// pages, as the kubelet computes it), nil when it runs in none (-cgroup).
type MemoryWindow struct {
	Seconds    float64   `json:"seconds"`
	Samples    int       `json:"samples"`
	RSS        MemStats  `json:"rss_mib"`
	Anon       MemStats  `json:"anon_mib"`
	File       MemStats  `json:"file_mib"`
	WorkingSet *MemStats `json:"working_set_mib,omitempty"`
}

// MemStats are the maximum and the median of one figure's samples, in MiB.
type MemStats struct {
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
}

// String is "max (median …)".
func (m MemStats) String() string { return fmt.Sprintf("%.1f (median %.1f)", m.Max, m.Median) }

// String is "RSS max (median …), anonymous …, file-backed …[, working
// set …] MiB over … s".
func (w MemoryWindow) String() string {
	ws := ""
	if w.WorkingSet != nil {
		ws = fmt.Sprintf(", working set %v", *w.WorkingSet)
	}
	return fmt.Sprintf("RSS %v, anonymous %v, file-backed %v%s MiB over %.0f s", w.RSS, w.Anon, w.File, ws, w.Seconds)
}

// Summarize returns the window of samples, taken in time order: the
// maximum and the median (of an even count, the mean of the middle two) of
// each figure, and the time from the first sample to the last. The working
// set is summarised when every sample has its cgroup's.
func Summarize(samples []Stats) MemoryWindow {
	w := MemoryWindow{Samples: len(samples)}
	if len(samples) == 0 {
		return w
	}
	w.Seconds = stats.Seconds(samples[len(samples)-1].At.Sub(samples[0].At))
	stats := func(of func(Stats) int64) MemStats {
		v := make([]int64, len(samples))
		for i, s := range samples {
			v[i] = of(s)
		}
		slices.Sort(v)
		n := len(v)
		return MemStats{Max: stats.MiB(v[n-1]), Median: stats.MiB((v[(n-1)/2] + v[n/2]) / 2)}
	}
	w.RSS = stats(func(s Stats) int64 { return s.RSSBytes })
	w.Anon = stats(func(s Stats) int64 { return s.AnonBytes })
	w.File = stats(func(s Stats) int64 { return s.FileBytes })
	if !slices.ContainsFunc(samples, func(s Stats) bool { return s.Cgroup == nil }) {
		ws := stats(func(s Stats) int64 { return s.Cgroup.WorkingSet() })
		w.WorkingSet = &ws
	}
	return w
}

// Measured is a process whose memory and CPU the benchmark reads: a
// controller, or a process of the plane.
type Measured interface {
	Stats() (Stats, error)
}

// SampleMemory reads each of procs every second for window (window/1 s + 1
// samples each, all taken together) and returns each one's summary, in the
// order of procs; an error when one exits or ctx ends.
func SampleMemory(ctx context.Context, procs []Measured, window time.Duration) ([]MemoryWindow, error) {
	samples := make([][]Stats, len(procs))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for start := time.Now(); ; {
		for i, p := range procs {
			s, err := p.Stats()
			if err != nil {
				return nil, err
			}
			samples[i] = append(samples[i], s)
		}
		if time.Since(start) >= window {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]MemoryWindow, len(procs))
	for i := range procs {
		out[i] = Summarize(samples[i])
	}
	return out, nil
}
