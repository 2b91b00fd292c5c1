package model_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

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
	t  *testing.T
	ns string
	ha bool
	// window is the rollout window; 0 rolls every change.
	window time.Duration
	// budget is --max-rollouts-per-hour, 0 (no storm brake) unless the
	// sequence's model knows the brake.
	budget int
	// clock, when not nil, is every replica's clock; only an in-process
	// nudge can be given one.
	clock    *clocktesting.FakePassiveClock
	replicas []*nudgetest.Nudge
}

func (r *inProcess) options(o *options.Options) {
	// One worker: the world's ballast then delays nudge's first sight of
	// a workload created just after (see world.ballast).
	o.RolloutWindow, o.MaxRolloutsPerHour, o.Workers = r.window, r.budget, 1
	if r.clock != nil {
		o.Clock = r.clock
	}
	if r.ha {
		o.LeaderElect = true
		o.Reloader.RetryPeriod = time.Second
	}
}

func (r *inProcess) one() *nudgetest.Nudge {
	return nudgetest.Start(r.t, suite.Plane.Config(), r.ns, r.options)
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

// processes runs the nudge binary (-nudge-bin) as processes, where an
// abrupt stop is a real kill -9. With two replicas, the Lease is short, so
// that a standby takes over within seconds of a killed leader.
type processes struct {
	t  *testing.T
	ns string
	ha bool
	// window is the rollout window; 0 rolls every change.
	window   time.Duration
	replicas []*exec.Cmd
	done     []chan error
	n        int
}

func (r *processes) one() (*exec.Cmd, chan error) {
	r.n++
	log, err := os.Create(filepath.Join(r.t.TempDir(), fmt.Sprintf("nudge-%d.log", r.n)))
	if err != nil {
		r.t.Fatal(err)
	}
	args := []string{"--kubeconfig=" + suite.Plane.Kubeconfig(), "--namespaces=" + r.ns, "--system-namespace=" + r.ns,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--rollout-window=" + r.window.String(), "--log-format=json",
		"--max-rollouts-per-hour=0", // the storm brake, which the models of these runs do not know
		"--workers=1"}               // see world.ballast
	if r.ha {
		args = append(args, "--leader-elect", "--leader-election-lease-duration=4s",
			"--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms")
	}
	cmd := exec.Command(*nudgeBinFlag, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting %s: %v", *nudgeBinFlag, err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		log.Close()
	}()
	r.t.Cleanup(func() { r.halt(cmd, done, false) })
	return cmd, done
}

// halt stops one process: SIGKILL when abrupt, else SIGTERM, waiting up to
// 30 s for a clean exit.
func (r *processes) halt(cmd *exec.Cmd, done chan error, abrupt bool) {
	sig := syscall.SIGTERM
	if abrupt {
		sig = syscall.SIGKILL
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return // already gone
	}
	select {
	case err := <-done:
		if err != nil && !abrupt {
			r.t.Errorf("nudge exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		r.t.Errorf("nudge did not stop within 30 s of SIGTERM")
	}
}

func (r *processes) start() {
	for range 1 + btoi(r.ha) {
		cmd, done := r.one()
		r.replicas, r.done = append(r.replicas, cmd), append(r.done, done)
	}
}

func (r *processes) stop(abrupt bool) {
	for i := range r.replicas {
		r.halt(r.replicas[i], r.done[i], abrupt)
	}
	r.replicas, r.done = nil, nil
}

func (r *processes) failover(i int, abrupt bool) {
	r.halt(r.replicas[i], r.done[i], abrupt)
	r.replicas[i], r.done[i] = r.one()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
