package process

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/hack/bench/cgroup"
)

func TestSummarize(t *testing.T) {
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	// sample is the i-th second's sample of anon and file MiB.
	sample := func(i int, anon, file float64) Stats {
		return Stats{At: at.Add(time.Duration(i) * time.Second), AnonBytes: int64(anon * (1 << 20)),
			FileBytes: int64(file * (1 << 20)), RSSBytes: int64((anon + file) * (1 << 20))}
	}
	tests := map[string]struct {
		samples []Stats
		want    MemoryWindow
	}{
		"no sample: nothing measured": {},
		"one sample is its own maximum and median": {
			samples: []Stats{sample(0, 40, 3)},
			want: MemoryWindow{Samples: 1, RSS: MemStats{Max: 43, Median: 43}, Anon: MemStats{Max: 40, Median: 40},
				File: MemStats{Max: 3, Median: 3}},
		},
		"the binary mapped back by a poll late in the window: the maximum holds it, the median does not": {
			samples: []Stats{sample(0, 40, 3), sample(1, 40, 3), sample(2, 40, 3), sample(3, 41, 11.5), sample(4, 40, 11.5)},
			want: MemoryWindow{Seconds: 4, Samples: 5, RSS: MemStats{Max: 52.5, Median: 43}, Anon: MemStats{Max: 41, Median: 40},
				File: MemStats{Max: 11.5, Median: 3}},
		},
		"each figure's maximum is its own, not the parts of the largest RSS": {
			samples: []Stats{sample(0, 50, 2), sample(1, 45, 10)},
			want: MemoryWindow{Seconds: 1, Samples: 2, RSS: MemStats{Max: 55, Median: 53.5}, Anon: MemStats{Max: 50, Median: 47.5},
				File: MemStats{Max: 10, Median: 6}},
		},
		"an even count's median is the mean of the middle two, in any order": {
			samples: []Stats{sample(0, 30, 0), sample(1, 10, 0), sample(2, 40, 0), sample(3, 20, 0)},
			want:    MemoryWindow{Seconds: 3, Samples: 4, RSS: MemStats{Max: 40, Median: 25}, Anon: MemStats{Max: 40, Median: 25}},
		},
	}
	// inCgroup is sample with its cgroup's usage and inactive file pages
	// in MiB.
	inCgroup := func(s Stats, usage, inactive float64) Stats {
		s.Cgroup = &cgroup.Memory{Usage: int64(usage * (1 << 20)), InactiveFile: int64(inactive * (1 << 20))}
		return s
	}
	tests["in a cgroup: the working set is usage less inactive file pages, summarised alone"] = struct {
		samples []Stats
		want    MemoryWindow
	}{
		samples: []Stats{inCgroup(sample(0, 40, 20), 70, 25), inCgroup(sample(1, 40, 20), 80, 20), inCgroup(sample(2, 40, 20), 60, 25)},
		want: MemoryWindow{Seconds: 2, Samples: 3, RSS: MemStats{Max: 60, Median: 60}, Anon: MemStats{Max: 40, Median: 40},
			File: MemStats{Max: 20, Median: 20}, WorkingSet: &MemStats{Max: 60, Median: 45}},
	}
	tests["a sample without its cgroup's: no working set"] = struct {
		samples []Stats
		want    MemoryWindow
	}{
		samples: []Stats{inCgroup(sample(0, 40, 20), 70, 25), sample(1, 40, 20)},
		want: MemoryWindow{Seconds: 1, Samples: 2, RSS: MemStats{Max: 60, Median: 60}, Anon: MemStats{Max: 40, Median: 40},
			File: MemStats{Max: 20, Median: 20}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Summarize(tt.samples)).To(Equal(tt.want))
		})
	}
}
