package controller

import (
	"errors"
	"strconv"

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

	// reloads is Reloader's reloader_reload_executed_total{success}, and
	// reloadsByNamespace its reloader_reload_executed_total_by_namespace
	// {success,namespace}, nil unless counted by namespace (see NewMetrics).
	reloads, reloadsByNamespace *prometheus.CounterVec
}

// NewMetrics creates nudge's metrics and Reloader's and registers them with
// reg, reusing those already registered there (nudge may run more than once
// in a process, as in tests). It returns any other registration error.
//
// Reloader's are counted as Reloader counts them
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/metrics/prometheus.go):
// reloader_reload_executed_total{success="true"} once per workload rolled,
// success="false" once per rollout write that failed (a conflict, retried
// at once, is not a failure), both series present from the start at 0.
// With byNamespace (Reloader's METRICS_COUNT_BY_NAMESPACE=enabled),
// reloader_reload_executed_total_by_namespace{success,namespace} counts the
// same per workload namespace; otherwise it is not registered at all, as in
// Reloader. A change sent to --webhook-url instead of rolled counts in
// neither, as in Reloader.
func NewMetrics(reg prometheus.Registerer, byNamespace bool) (*Metrics, error) {
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
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader",
			Name:      "reload_executed_total",
			Help:      "Counter of reloads executed by Reloader.",
		}, []string{"success"}),
	}
	counters := []**prometheus.CounterVec{&m.rollouts, &m.decisions, &m.warnings, &m.reloads}
	if byNamespace {
		m.reloadsByNamespace = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "reloader",
			Name:      "reload_executed_total_by_namespace",
			Help:      "Counter of reloads executed by Reloader by namespace.",
		}, []string{"success", "namespace"})
		counters = append(counters, &m.reloadsByNamespace)
	}
	for _, c := range counters {
		var err error
		if *c, err = Register(reg, *c); err != nil {
			return nil, err
		}
	}
	m.reloads.WithLabelValues("true").Add(0)
	m.reloads.WithLabelValues("false").Add(0)
	return m, nil
}

// rolled counts a rollout of a workload of kind in namespace.
func (m *Metrics) rolled(kind, namespace string) {
	if m != nil {
		m.rollouts.WithLabelValues(kind).Inc()
		m.reloaded(true, namespace)
	}
}

// rollFailed counts a rollout write that failed, in Reloader's counters.
func (m *Metrics) rollFailed(namespace string) {
	if m != nil {
		m.reloaded(false, namespace)
	}
}

func (m *Metrics) reloaded(success bool, namespace string) {
	s := strconv.FormatBool(success)
	m.reloads.WithLabelValues(s).Inc()
	if m.reloadsByNamespace != nil {
		m.reloadsByNamespace.WithLabelValues(s, namespace).Inc()
	}
}

func (m *Metrics) decided(kind string, a rollout.Action) {
	if m != nil {
		m.decisions.WithLabelValues(kind, a.String()).Inc()
	}
}

func (m *Metrics) warned(reason string) {
	if m != nil {
		m.warnings.WithLabelValues(reason).Inc()
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
