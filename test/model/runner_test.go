package model_test

import (
	"testing"
	"time"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// runner runs nudge for one sequence: one replica, or two with leader
// election.
type runner interface {
	// start starts every replica.
	start()
	// stop stops every replica; abrupt asks for kill -9 where the runner
	// can (a process), a stop otherwise.
	stop(abrupt bool)
	// failover stops replica i, the leader or not, and starts another.
	failover(i int, abrupt bool)
}

// inProcess runs nudge in the test's process (nudgetest), where a stop is
// always a clean one: for the model a kill -9 is the same step, since nudge
// keeps no state that a clean stop would save.
type inProcess struct {
	t        *testing.T
	ns       string
	ha       bool
	replicas []*nudgetest.Nudge
}

func (r *inProcess) options(o *options.Options) {
	o.RolloutWindow = 0
	if r.ha {
		o.LeaderElect = true
		o.Reloader.RetryPeriod = time.Second
	}
}

func (r *inProcess) one() *nudgetest.Nudge {
	return nudgetest.Start(r.t, plane.Config(), r.ns, r.options)
}

func (r *inProcess) start() {
	r.replicas = []*nudgetest.Nudge{r.one()}
	if r.ha {
		r.replicas = append(r.replicas, r.one())
	}
}

func (r *inProcess) stop(bool) {
	for _, n := range r.replicas {
		n.Stop(r.t)
	}
	r.replicas = nil
}

func (r *inProcess) failover(i int, _ bool) {
	r.replicas[i].Stop(r.t)
	r.replicas[i] = r.one()
}
