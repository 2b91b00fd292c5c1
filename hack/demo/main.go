// Command demo is nudge's showcase, run by `make demo`.
//
// It starts a local control plane in cluster mode (internal/testbed), runs
// the real nudge binary against it, creates a 3-replica Deployment that uses
// a ConfigMap and a Secret, changes the ConfigMap and narrates, as it
// happens, what a user watching the cluster sees: nudge's log line and
// Event, the new ReplicaSet, the pods replaced, and how long it all took.
// It then shows that a label-only change to the Secret rolls nothing.
//
// The plane and nudge then stay up, with the KUBECONFIG to use printed, until
// SIGINT or SIGTERM; the demo then stops nudge and the plane and exits 0.
//
// Flags:
//
//	-nudge path   the nudge binary (default bin/nudge, built by `make build`)
//	-exit         stop everything and exit 0 as soon as the narrative is over,
//	              instead of waiting for a signal (for smoke tests)
//
// A signal before the narrative is over stops everything and exits 130.
// On an error it stops everything it started, keeps the logs, says where
// they are, and exits 1.
//
// Everything listens on 127.0.0.1; the demo never connects to a pod or
// Service IP (they are fake).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"nudge.dev/nudge/internal/testbed"
)

// startTimeout bounds the start of the control plane on a loaded machine.
const startTimeout = 3 * time.Minute

// errInterrupted says that SIGINT or SIGTERM arrived before the demo was
// over.
var errInterrupted = errors.New("stopped early")

func main() {
	nudgeBin := flag.String("nudge", "bin/nudge", "path of the nudge binary (built by `make build`)")
	exit := flag.Bool("exit", false, "stop everything and exit once the demo has run, instead of waiting for Ctrl-C")
	flag.Parse()

	p := newPrinter(os.Stdout, os.Stderr)
	err := run(p, *nudgeBin, *exit)
	switch {
	case errors.Is(err, errInterrupted):
		p.errorf("demo: %v", err)
		os.Exit(130)
	case err != nil:
		p.errorf("demo: %v", err)
		os.Exit(1)
	}
}

// run runs the demo and stops whatever it started before returning, keeping
// the logs when it failed. It returns errInterrupted (wrapped) when a signal
// cut the demo short, and nil when one ended the wait at its end.
func run(p *printer, nudgeBin string, exit bool) (err error) {
	if _, err := os.Stat(nudgeBin); err != nil {
		return fmt.Errorf("finding the nudge binary (run `make build`, or pass -nudge): %w", err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		sig := <-signals
		p.step("Received %v: stopping nudge and the plane", sig)
		cancel(fmt.Errorf("%w: received %v", errInterrupted, sig))
	}()

	p.step("Starting the local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with 2 fake nodes")
	startCtx, cancelStart := context.WithTimeout(ctx, startTimeout)
	plane, err := testbed.Start(startCtx, testbed.Options{Mode: testbed.Cluster, Nodes: 2, Logf: p.detailf, CallerHandlesSignals: true})
	cancelStart()
	if err != nil {
		return withCause(ctx, fmt.Errorf("starting the control plane: %w", err))
	}
	var n *nudgeProcess
	defer func() {
		var stopErr error
		if n != nil {
			stopErr = n.stop()
		}
		// On failure the logs stay, and Stop says where.
		failed := (err != nil && !errors.Is(err, errInterrupted)) || stopErr != nil
		stopErr = errors.Join(stopErr, plane.Stop(failed))
		if stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping: %w", stopErr))
		}
		if err == nil || errors.Is(err, errInterrupted) {
			p.step("Stopped nudge and the control plane")
		}
	}()

	n, err = startNudge(ctx, p, plane, nudgeBin)
	if err != nil {
		return withCause(ctx, err)
	}
	if err := showcase(ctx, p, plane, n); err != nil {
		return withCause(ctx, err)
	}
	printTryIt(p, plane)
	if exit {
		return nil
	}
	p.step("The plane and nudge stay up until Ctrl-C. In another terminal:")
	p.detailf("export KUBECONFIG=%s", plane.Kubeconfig())
	p.detailf("alias kubectl=%s", filepath.Join(plane.BinDir(), "kubectl"))
	p.detailf("kubectl -n %s get pods -w", shopNamespace)
	p.detailf("bin/kubectl-nudge explain -n %s deploy/web   # or put bin/ on PATH: kubectl nudge explain; kubectl nudge status -A", shopNamespace)
	p.detailf("nudge's log: %s (rollouts are shown here too)", n.logPath)
	select {
	case <-ctx.Done():
		return nil
	case <-n.done:
		return n.exited()
	}
}

// withCause returns err, or the interruption that cancelled ctx when there
// is one, so that a Ctrl-C is reported as such rather than as the failed
// wait it caused.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) {
		return cause
	}
	return err
}
