package nudgetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"nudge.dev/nudge/internal/app"
	"nudge.dev/nudge/internal/options"
)

var rootLogger sync.Once

// Nudge is one running nudge.
type Nudge struct {
	cancel context.CancelFunc
	done   chan error
	logs   *buffer
}

// Start runs nudge against cfg, watching only namespace and keeping its key
// there, with the test defaults (no metrics or probe servers, a 2 s rollout
// window, discovery polled every 0.5 s) changed by mutate. Its logs are kept (Logs) and printed if t fails.
// It is stopped when t ends.
func Start(t testing.TB, cfg *rest.Config, namespace string, mutate func(*options.Options)) *Nudge {
	t.Helper()
	opts := options.Default()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.SystemNamespace = namespace
	opts.Namespaces = []string{namespace}
	opts.RolloutWindow = 2 * time.Second
	opts.DiscoveryInterval = 500 * time.Millisecond
	if mutate != nil {
		mutate(&opts)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("nudge options: %v", err)
	}
	// What logs through controller-runtime's root logger rather than the
	// context's (client-go's reflectors, through klog) is dropped; unset,
	// controller-runtime prints a stack to stderr after 30 s that reads
	// like a goroutine dump.
	rootLogger.Do(func() { ctrl.SetLogger(logr.Discard()) })
	n := &Nudge{done: make(chan error, 1), logs: &buffer{}}
	// Level -2 (V(2), nudge's most verbose) also turns off the sampling
	// controller-runtime's zap applies at higher levels, which keeps only
	// the first 100 lines a second of each message: a test reads them all.
	log := zap.New(zap.WriteTo(n.logs), zap.JSONEncoder(), zap.Level(zapcore.Level(-2)))
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	n.cancel = cancel
	go func() { n.done <- app.Run(ctx, rest.CopyConfig(cfg), opts) }()
	t.Cleanup(func() {
		n.Stop(t)
		if t.Failed() {
			KeepOutput(t, "nudge's log", n.Logs())
		}
	})
	return n
}

// Stop stops nudge and waits up to 30 s for it to return, failing t if it
// returned an error. Stopping twice is harmless.
func (n *Nudge) Stop(t testing.TB) {
	t.Helper()
	n.StopWithin(t, 30*time.Second)
}

// StopWithin stops nudge and waits up to limit for it to return, failing t
// (with the process's goroutines) if it did not or returned an error.
// Stopping twice is harmless.
func (n *Nudge) StopWithin(t testing.TB, limit time.Duration) {
	t.Helper()
	n.cancel()
	began := time.Now()
	select {
	case err, ok := <-n.done:
		if d := time.Since(began); d > 5*time.Second && ok {
			t.Logf("nudge took %s to stop", d)
		}
		if ok {
			close(n.done)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("nudge stopped with an error: %v", err)
		}
	case <-time.After(limit):
		// nudge runs in the test's process: its goroutines are among
		// these, grouped by stack.
		var stacks bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("nudge did not stop within %v", limit)
		KeepOutput(t, "the goroutines of the test's process (nudge's among them)", stacks.String())
	}
}

// Logs returns everything nudge has logged so far, one JSON object a line.
func (n *Nudge) Logs() string { return n.logs.String() }

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// outputTail is how many lines of a kept output a failed test prints.
const outputTail = 15

// KeepOutput writes what, a long output (a log, goroutine stacks), to a file
// that outlives the test and logs its path and last outputTail lines. CI
// shows only the end of a run's output; printed whole, a log of thousands
// of lines pushed the test's own failure out of it.
func KeepOutput(t testing.TB, what, text string) {
	t.Helper()
	lines := strings.SplitAfter(strings.TrimRight(text, "\n"), "\n")
	tail := strings.Join(lines[max(0, len(lines)-outputTail):], "")
	f, err := os.CreateTemp("", "nudge-test-output-*.txt")
	if err == nil {
		_, err = f.WriteString(text)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Logf("%s, %d lines (could not keep them: %v); the last %d:\n%s", what, len(lines), err, outputTail, tail)
		return
	}
	t.Logf("%s, %d lines, kept in %s; the last %d:\n%s", what, len(lines), f.Name(), outputTail, tail)
}
