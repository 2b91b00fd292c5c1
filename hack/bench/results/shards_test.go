package results

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
)

func TestLargestShardMemory(t *testing.T) {
	tests := map[string]struct {
		shards   []ShardFigures
		want     float64
		wantWhat string
	}{
		"no shard":                      {wantWhat: "peak RSS"},
		"without cgroups: the peak RSS": {shards: []ShardFigures{{PeakRSSMiB: 90}, {PeakRSSMiB: 120}}, want: 120, wantWhat: "peak RSS"},
		"in cgroups: the peak working set, however large the RSS": {
			shards:   []ShardFigures{{PeakRSSMiB: 300, PeakWorkingSetMiB: ptr.To(200.0)}, {PeakRSSMiB: 250, PeakWorkingSetMiB: ptr.To(240.0)}},
			want:     240,
			wantWhat: "peak working set",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, what := largestShardMemory(&Shards{Shards: tt.shards})
			g.Expect(got).To(Equal(tt.want))
			g.Expect(what).To(Equal(tt.wantWhat))
		})
	}
}
