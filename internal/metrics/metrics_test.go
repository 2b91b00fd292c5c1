package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"nudge.dev/nudge/internal/rollout"
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
				m.RollFailed("Deployment", "shop")
			},
			want: []string{
				`reloader_reload_executed_total{success="false"} 1`,
				`reloader_reload_executed_total{success="true"} 2`,
			},
		},
		"rollouts and failures, by namespace": {
			byNamespace: true,
			record: func(m *Metrics) {
				m.Rolled("Deployment", "shop")
				m.Rolled("Deployment", "blog")
				m.RollFailed("Deployment", "shop")
			},
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
				if !strings.HasPrefix(f.GetName(), "reloader_reload_executed_total") {
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

// TestReloaderSeries: every reloader_* series nudge serves has Reloader
// 1.4's name, type and label names (internal/pkg/metrics/prometheus.go), and
// counts what nudge does: a rollout, a failed rollout write, a Roll
// decision, a reconcile, a retry.
func TestReloaderSeries(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m, err := New(reg, true)
	g.Expect(err).NotTo(HaveOccurred())
	m.Decided("Deployment", rollout.Roll)
	m.Decided("Deployment", rollout.Baseline)
	m.Rolled("Deployment", "shop")
	m.Waited("Deployment", 1500*time.Millisecond)
	m.RollFailed("StatefulSet", "shop")
	m.Reconciled(ResultSuccess, 3*time.Millisecond)
	m.Reconciled(ResultError, 3*time.Millisecond)
	m.Retried()

	type series struct {
		kind   dto.MetricType
		labels []string
		values map[string]float64 // labels as name="value",... → count
	}
	want := map[string]series{
		"reloader_reload_executed_total": {dto.MetricType_COUNTER, []string{"success"},
			map[string]float64{`success="true"`: 1, `success="false"`: 1}},
		"reloader_reload_executed_total_by_namespace": {dto.MetricType_COUNTER, []string{"namespace", "success"},
			map[string]float64{`namespace="shop",success="true"`: 1, `namespace="shop",success="false"`: 1}},
		"reloader_action_total": {dto.MetricType_COUNTER, []string{"result", "workload_kind"},
			map[string]float64{`result="success",workload_kind="Deployment"`: 1, `result="error",workload_kind="StatefulSet"`: 1}},
		"reloader_action_latency_seconds": {dto.MetricType_HISTOGRAM, []string{"workload_kind"},
			map[string]float64{`workload_kind="Deployment"`: 1}},
		"reloader_reconcile_total": {dto.MetricType_COUNTER, []string{"result"},
			map[string]float64{`result="success"`: 1, `result="error"`: 1}},
		"reloader_reconcile_duration_seconds": {dto.MetricType_HISTOGRAM, []string{"result"},
			map[string]float64{`result="success"`: 1, `result="error"`: 1}},
		"reloader_retries_total": {dto.MetricType_COUNTER, nil, map[string]float64{"": 1}},
		"reloader_workloads_matched_total": {dto.MetricType_COUNTER, []string{"kind"},
			map[string]float64{`kind="Deployment"`: 1}},
	}
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	got := map[string]series{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "reloader_") {
			continue
		}
		s := series{kind: f.GetType(), values: map[string]float64{}}
		for i, sample := range f.GetMetric() {
			var names, labels []string
			for _, l := range sample.GetLabel() {
				names = append(names, l.GetName())
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if i == 0 {
				s.labels = names
			}
			v := sample.GetCounter().GetValue()
			if f.GetType() == dto.MetricType_HISTOGRAM {
				v = float64(sample.GetHistogram().GetSampleCount())
			}
			s.values[strings.Join(labels, ",")] = v
		}
		got[f.GetName()] = s
	}
	g.Expect(got).To(Equal(want))
}
