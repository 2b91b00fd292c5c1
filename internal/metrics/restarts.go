package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// unfinished counts the restarts through the Eviction API that have not
// finished in time (nudge_unfinished_restarts): the workloads whose restart
// halted, or is still under way --rollout-timeout after its change. It
// keeps the keys of those workloads alone.
type unfinished struct {
	gauge prometheus.Gauge
	mu    sync.Mutex
	keys  map[string]bool
}

func newUnfinished(reg prometheus.Registerer) (*unfinished, error) {
	g, err := Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "nudge_unfinished_restarts",
		Help: "Workloads whose restart through the Eviction API halted (a replacement not Ready within --rollout-timeout) or is not done --rollout-timeout after its change.",
	}))
	if err != nil {
		return nil, err
	}
	return &unfinished{gauge: g, keys: map[string]bool{}}, nil
}

// Restart records whether the restart of the workload key (kind/namespace/
// name) is unfinished: halted, or under way past the rollout timeout.
// false also when it is done or the workload is gone.
func (m *Metrics) Restart(key string, unfinished bool) {
	if m == nil || m.unfinished == nil {
		return
	}
	u := m.unfinished
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case unfinished && !u.keys[key]:
		u.keys[key] = true
		u.gauge.Inc()
	case !unfinished && u.keys[key]:
		delete(u.keys, key)
		u.gauge.Dec()
	}
}
