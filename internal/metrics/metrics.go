package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"nudge.dev/nudge/internal/rollout"
)

// Metrics are nudge's Prometheus metrics, and beside them Reloader's, so
// that dashboards and alerts built on Reloader keep working. Their names are
// API; nudge's labels never name an object.
type Metrics struct {
	rollouts  *prometheus.CounterVec
	decisions *prometheus.CounterVec
	warnings  *prometheus.CounterVec
	latency   *prometheus.HistogramVec

	unfinished *unfinished
	reloader   reloader
}

// New creates nudge's metrics and Reloader's and registers them with
// reg, reusing those already registered there (nudge may run more than once
// in a process, as in tests). It returns any other registration error.
//
// Reloader's are counted as Reloader 1.4 counts them
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/metrics/prometheus.go):
// reloader_reload_executed_total{success="true"} and
// reloader_action_total{workload_kind,result="success"} once per workload
// rolled, success="false" and result="error" once per rollout write that
// failed (a conflict, retried at once, is not a failure), the two
// reloader_reload_executed_total series present from the start at 0.
// With byNamespace (Reloader's METRICS_COUNT_BY_NAMESPACE=enabled),
// reloader_reload_executed_total_by_namespace{success,namespace} counts the
// same per workload namespace; otherwise it is not registered at all, as in
// Reloader. A change sent to --webhook-url instead of rolled counts in
// none of them, as in Reloader. See reloader for the others.
func New(reg prometheus.Registerer, byNamespace bool) (*Metrics, error) {
	m := &Metrics{
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nudge_rollouts_total",
			Help: "Rollouts nudge triggered, by workload kind.",
		}, []string{"kind"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nudge_decisions_total",
			Help: "Reconcile decisions, by workload kind and action (None, Baseline, Roll, Wait, Hold).",
		}, []string{"kind", "action"}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nudge_warnings_total",
			Help: "Warning Events nudge recorded, by reason.",
		}, []string{"reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "nudge_rollout_latency_seconds",
			Help: "Seconds from nudge seeing a change of a source to its rollout of a workload that uses it, the rollout window's wait included, by workload kind.",
			// 5 ms to about 10 minutes: a lone change rolls in milliseconds, one
			// inside the window waits for its end (5 s by default), one waiting
			// for a rollout slot as long as a wave takes.
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 14),
		}, []string{"kind"}),
	}
	var err error
	if m.latency, err = Register(reg, m.latency); err != nil {
		return nil, err
	}
	for _, c := range []**prometheus.CounterVec{&m.rollouts, &m.decisions, &m.warnings} {
		if *c, err = Register(reg, *c); err != nil {
			return nil, err
		}
	}
	if m.unfinished, err = newUnfinished(reg); err != nil {
		return nil, err
	}
	if m.reloader, err = newReloader(reg, byNamespace); err != nil {
		return nil, err
	}
	return m, nil
}

// Rolled counts a rollout of a workload of kind in namespace.
func (m *Metrics) Rolled(kind, namespace string) {
	if m != nil {
		m.rollouts.WithLabelValues(kind).Inc()
		m.reloader.acted(kind, namespace, true)
	}
}

// RollFailed counts a rollout write of a workload of kind in namespace that
// failed, in Reloader's counters.
func (m *Metrics) RollFailed(kind, namespace string) {
	if m != nil {
		m.reloader.acted(kind, namespace, false)
	}
}

// Decided counts a reconcile's decision for a workload of kind; a Roll also
// in Reloader's reloader_workloads_matched_total.
func (m *Metrics) Decided(kind string, a rollout.Action) {
	if m != nil {
		m.decisions.WithLabelValues(kind, a.String()).Inc()
		if a == rollout.Roll {
			m.reloader.matched.WithLabelValues(kind).Inc()
		}
	}
}

// Warned counts a Warning Event of reason.
func (m *Metrics) Warned(reason string) {
	if m != nil {
		m.warnings.WithLabelValues(reason).Inc()
	}
}

// Waited records the time from nudge seeing a source change to the rollout
// of a workload of kind it caused, also in Reloader's
// reloader_action_latency_seconds.
func (m *Metrics) Waited(kind string, d time.Duration) {
	if m != nil {
		m.latency.WithLabelValues(kind).Observe(d.Seconds())
		m.reloader.actionSeconds.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// Register registers c with reg and returns it, or returns the collector
// registered before with the same description (nudge run twice in one
// process, as in tests) when that one is a T. It returns any other
// registration error.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}
