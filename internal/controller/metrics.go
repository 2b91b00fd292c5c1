package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"nudge.dev/nudge/internal/rollout"
)

// Metrics are nudge's Prometheus metrics. Their names are API; labels never
// name an object.
type Metrics struct {
	rollouts  *prometheus.CounterVec
	decisions *prometheus.CounterVec
	warnings  *prometheus.CounterVec
}

// NewMetrics creates nudge's metrics and registers them with reg, reusing
// those already registered there (nudge may run more than once in a process,
// as in tests). It returns any other registration error.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
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
	}
	for _, c := range []**prometheus.CounterVec{&m.rollouts, &m.decisions, &m.warnings} {
		err := reg.Register(*c)
		var already prometheus.AlreadyRegisteredError
		switch {
		case errors.As(err, &already):
			existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, err
			}
			*c = existing
		case err != nil:
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) rolled(kind string) {
	if m != nil {
		m.rollouts.WithLabelValues(kind).Inc()
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
