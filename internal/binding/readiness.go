package binding

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"nudge.dev/nudge/api/v1alpha1"
	nudgemetrics "nudge.dev/nudge/internal/metrics"
)

// readyReasons are the reasons of the Ready condition, each with the status
// it goes with: nudge_value_bindings serves each of them, 0 when no binding
// has it, so an alert on a reason sees 0 rather than no series.
var readyReasons = []struct{ ready, reason string }{
	{"True", v1alpha1.ReasonApplied},
	{"False", v1alpha1.ReasonSourceNotFound},
	{"False", v1alpha1.ReasonKeyNotFound},
	{"False", v1alpha1.ReasonTargetNotFound},
	{"False", v1alpha1.ReasonInvalidFieldPath},
	{"False", v1alpha1.ReasonInvalidValue},
	{"False", v1alpha1.ReasonRefused},
	{"False", v1alpha1.ReasonConflict},
}

// readyOf returns the status of the Ready condition with reason.
func readyOf(reason string) string {
	if reason == v1alpha1.ReasonApplied {
		return "True"
	}
	return "False"
}

// states are the Ready reasons of the bindings one Reconciler reconciled,
// by "namespace/name": set when it records a binding's status, forgotten
// when the binding is gone.
type states struct {
	mu        sync.Mutex
	byBinding map[string]string
}

func (s *states) set(key, reason string) {
	if s == nil || reason == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byBinding[key] = reason
}

func (s *states) forget(key string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byBinding, key)
}

// readyCollector serves nudge_value_bindings{ready,reason}: the number of
// ValueBindings whose Ready condition nudge last set to that status and
// reason, summed over the reconcilers running in the process (one, but for
// tests that run several nudges). Only the leader reconciles, so only its
// counts are not all 0.
type readyCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	sets map[*states]bool
}

func newReadyCollector() *readyCollector {
	return &readyCollector{
		desc: prometheus.NewDesc("nudge_value_bindings",
			"ValueBindings by the status and reason of their Ready condition, as nudge last set it.",
			[]string{"ready", "reason"}, nil),
		sets: map[*states]bool{},
	}
}

// Describe implements prometheus.Collector.
func (c *readyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one gauge per known reason (0
// when no binding has it) and per other reason some binding has.
func (c *readyCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	c.mu.Lock()
	for s := range c.sets {
		s.mu.Lock()
		for _, reason := range s.byBinding {
			counts[reason]++
		}
		s.mu.Unlock()
	}
	c.mu.Unlock()
	for _, r := range readyReasons {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[r.reason]), r.ready, r.reason)
		delete(counts, r.reason)
	}
	for reason, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), readyOf(reason), reason)
	}
}

// registerStates registers nudge_value_bindings with reg (or reuses the
// collector registered there before) and returns the states the reconciler
// keeps for it; they stop counting when mgr stops. It returns nil states
// when reg is nil, and any registration error.
func registerStates(reg prometheus.Registerer, mgr manager.Manager) (*states, error) {
	if reg == nil {
		return nil, nil
	}
	c, err := nudgemetrics.Register(reg, newReadyCollector())
	if err != nil {
		return nil, err
	}
	s := &states{byBinding: map[string]string{}}
	c.mu.Lock()
	c.sets[s] = true
	c.mu.Unlock()
	// Removed when the manager stops: a stopped nudge counts nothing.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		c.mu.Lock()
		delete(c.sets, s)
		c.mu.Unlock()
		return nil
	}))
	return s, err
}
