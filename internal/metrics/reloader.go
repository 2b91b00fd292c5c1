package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of reloader_reconcile_total and reloader_action_total, as Reloader
// names them.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// reloader holds the reloader_* series of Stakater Reloader 1.4
// (internal/pkg/metrics/prometheus.go, NewCollectors and
// SetupPrometheusEndpoint) that mean something in nudge, under the same
// names, label names, types and histogram buckets, so that dashboards and
// alerts built on Reloader keep working. docs/reference.md lists which of
// Reloader's series nudge serves, which not, and why.
type reloader struct {
	// reloads is reloader_reload_executed_total{success}; reloadsByNamespace
	// reloader_reload_executed_total_by_namespace{success,namespace}, nil
	// unless counted by namespace (METRICS_COUNT_BY_NAMESPACE=enabled).
	reloads, reloadsByNamespace *prometheus.CounterVec
	// reconciles is reloader_reconcile_total{result}, reconcileSeconds
	// reloader_reconcile_duration_seconds{result}: in nudge one reconcile of
	// one workload, where Reloader handles one event of a source.
	reconciles       *prometheus.CounterVec
	reconcileSeconds *prometheus.HistogramVec
	// actions is reloader_action_total{workload_kind,result}, one per
	// rollout write; actionSeconds reloader_action_latency_seconds
	// {workload_kind}, from nudge seeing the change to the rollout.
	actions       *prometheus.CounterVec
	actionSeconds *prometheus.HistogramVec
	// retries is reloader_retries_total: reconciles retried after an error
	// or a write conflict.
	retries prometheus.Counter
	// matched is reloader_workloads_matched_total{kind}: workloads decided
	// to roll.
	matched *prometheus.CounterVec
}

// newReloader creates Reloader's series and registers them with reg (see
// Register); the by-namespace counter only with byNamespace, as in
// Reloader. Both reloader_reload_executed_total series start at 0, as in
// Reloader.
func newReloader(reg prometheus.Registerer, byNamespace bool) (reloader, error) {
	r := reloader{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader", Name: "reload_executed_total",
			Help: "Counter of reloads executed by Reloader.",
		}, []string{"success"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader", Name: "reconcile_total",
			Help: "Total number of reconcile/handler invocations by result.",
		}, []string{"result"}),
		reconcileSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "reloader", Name: "reconcile_duration_seconds",
			Help:    "Time spent in reconcile/handler in seconds.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader", Name: "action_total",
			Help: "Total number of reload actions by workload kind and result.",
		}, []string{"workload_kind", "result"}),
		actionSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "reloader", Name: "action_latency_seconds",
			Help:    "Time from event received to action applied in seconds.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"workload_kind"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "reloader", Name: "retries_total",
			Help: "Total number of retry attempts.",
		}),
		matched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader", Name: "workloads_matched_total",
			Help: "Total number of workloads matched for reload by kind.",
		}, []string{"kind"}),
	}
	var err error
	counters := []**prometheus.CounterVec{&r.reloads, &r.reconciles, &r.actions, &r.matched}
	if byNamespace {
		r.reloadsByNamespace = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader", Name: "reload_executed_total_by_namespace",
			Help: "Counter of reloads executed by Reloader by namespace.",
		}, []string{"success", "namespace"})
		counters = append(counters, &r.reloadsByNamespace)
	}
	for _, c := range counters {
		if *c, err = Register(reg, *c); err != nil {
			return r, err
		}
	}
	for _, h := range []**prometheus.HistogramVec{&r.reconcileSeconds, &r.actionSeconds} {
		if *h, err = Register(reg, *h); err != nil {
			return r, err
		}
	}
	if r.retries, err = Register(reg, r.retries); err != nil {
		return r, err
	}
	r.reloads.WithLabelValues("true").Add(0)
	r.reloads.WithLabelValues("false").Add(0)
	return r, nil
}

// acted counts a rollout write of a workload of kind (its Kind, as
// "Deployment") in namespace, successful or not.
func (r *reloader) acted(kind, namespace string, success bool) {
	s := strconv.FormatBool(success)
	r.reloads.WithLabelValues(s).Inc()
	if r.reloadsByNamespace != nil {
		r.reloadsByNamespace.WithLabelValues(s, namespace).Inc()
	}
	result := ResultSuccess
	if !success {
		result = ResultError
	}
	r.actions.WithLabelValues(kind, result).Inc()
}

// Reconciled counts one reconcile of a workload that ended with result
// (ResultSuccess or ResultError) after d, in Reloader's
// reloader_reconcile_total and reloader_reconcile_duration_seconds.
func (m *Metrics) Reconciled(result string, d time.Duration) {
	if m != nil {
		m.reloader.reconciles.WithLabelValues(result).Inc()
		m.reloader.reconcileSeconds.WithLabelValues(result).Observe(d.Seconds())
	}
}

// Retried counts a reconcile retried after an error or a write conflict, in
// Reloader's reloader_retries_total.
func (m *Metrics) Retried() {
	if m != nil {
		m.reloader.retries.Inc()
	}
}
