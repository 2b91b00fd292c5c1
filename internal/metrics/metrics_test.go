package metrics

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
)

// TestReloaderCounters: Reloader's counters as Reloader has them: both
// success series at 0 from the start, the by-namespace counter only when
// asked for (METRICS_COUNT_BY_NAMESPACE=enabled), one count per rollout or
// failed rollout write.
func TestReloaderCounters(t *testing.T) {
	tests := map[string]struct {
		byNamespace bool
		record      func(m *Metrics)
		want        []string
	}{
		"nothing counted: both series at 0, no by-namespace counter": {
			record: func(*Metrics) {},
			want: []string{
				`reloader_reload_executed_total{success="false"} 0`,
				`reloader_reload_executed_total{success="true"} 0`,
			},
		},
		"rollouts and failures, without the by-namespace counter": {
			record: func(m *Metrics) {
				m.Rolled("Deployment", "shop")
				m.Rolled("StatefulSet", "shop")
				m.RollFailed("shop")
			},
			want: []string{
				`reloader_reload_executed_total{success="false"} 1`,
				`reloader_reload_executed_total{success="true"} 2`,
			},
		},
		"rollouts and failures, by namespace": {
			byNamespace: true,
			record:      func(m *Metrics) { m.Rolled("Deployment", "shop"); m.Rolled("Deployment", "blog"); m.RollFailed("shop") },
			want: []string{
				`reloader_reload_executed_total{success="false"} 1`,
				`reloader_reload_executed_total{success="true"} 2`,
				`reloader_reload_executed_total_by_namespace{namespace="blog",success="true"} 1`,
				`reloader_reload_executed_total_by_namespace{namespace="shop",success="false"} 1`,
				`reloader_reload_executed_total_by_namespace{namespace="shop",success="true"} 1`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			reg := prometheus.NewRegistry()
			m, err := New(reg, tc.byNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			tc.record(m)
			families, err := reg.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, f := range families {
				if !strings.HasPrefix(f.GetName(), "reloader_") {
					continue
				}
				for _, s := range f.GetMetric() {
					var labels []string
					for _, l := range s.GetLabel() {
						labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
					}
					got = append(got, f.GetName()+"{"+strings.Join(labels, ",")+"} "+
						strconv.FormatFloat(s.GetCounter().GetValue(), 'g', -1, 64))
				}
			}
			g.Expect(got).To(ConsistOf(tc.want))
		})
	}
}
