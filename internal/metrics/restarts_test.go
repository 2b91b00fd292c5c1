package metrics

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestUnfinishedRestarts: nudge_unfinished_restarts counts each workload
// once while its restart is unfinished, and no more once it is not.
func TestUnfinishedRestarts(t *testing.T) {
	tests := map[string]struct {
		record func(m *Metrics)
		want   float64
	}{
		"none recorded: 0": {record: func(*Metrics) {}, want: 0},
		"one workload told twice counts once": {record: func(m *Metrics) {
			m.Restart("StatefulSet/shop/db", true)
			m.Restart("StatefulSet/shop/db", true)
		}, want: 1},
		"a restart done counts no more": {record: func(m *Metrics) {
			m.Restart("StatefulSet/shop/db", true)
			m.Restart("DaemonSet/shop/agent", true)
			m.Restart("StatefulSet/shop/db", false)
		}, want: 1},
		"a restart never unfinished is not counted when done": {record: func(m *Metrics) {
			m.Restart("StatefulSet/shop/db", false)
		}, want: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			m, err := New(prometheus.NewRegistry(), false)
			g.Expect(err).NotTo(HaveOccurred())
			tc.record(m)
			g.Expect(testutil.ToFloat64(m.unfinished.gauge)).To(Equal(tc.want))
		})
	}
}
