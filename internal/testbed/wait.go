package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

const (
	// pollInterval is how often a wait checks its condition.
	pollInterval = 50 * time.Millisecond
	// portAttempts is how many times a component is started on fresh ports
	// when another process took one of its ports between the moment the
	// testbed found it free and the moment the component bound it.
	portAttempts = 3
)

// waitFor calls check every pollInterval until it returns nil. It fails when
// ctx ends, when timeout passes, or as soon as one of procs exits; the error
// names what it waited for, check's last error, and, on timeout, the tail of
// the log of the last of procs.
func waitFor(ctx context.Context, timeout time.Duration, what string, procs []*process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	start := time.Now()
	for {
		for _, proc := range procs {
			if err := proc.exitError(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		last := check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("gave up after %v waiting for %s: %w (last check: %v)",
				time.Since(start).Round(time.Millisecond), what, ctx.Err(), last)
			if len(procs) > 0 {
				subject := procs[len(procs)-1]
				err = fmt.Errorf("%w; log %s ends with:\n%s", err, subject.logPath, subject.logTail())
			}
			return err
		case <-ticker.C:
		}
	}
}

// startOnFreePorts finds n free ports on 127.0.0.1, starts a component on
// them with start, waits for it with ready, and returns it. When the
// component exited because a port was taken in between, it tries again with
// fresh ports, up to portAttempts times.
func (p *Plane) startOnFreePorts(ctx context.Context, n int, start func(ports []int) (*process, error), ready func(context.Context, *process) error) (*process, error) {
	for attempt := 1; ; attempt++ {
		ports, err := FreePorts(n)
		if err != nil {
			return nil, err
		}
		proc, err := start(ports)
		if err != nil {
			return nil, err
		}
		err = ready(ctx, proc)
		if err == nil {
			return proc, nil
		}
		if attempt == portAttempts || proc.exitError() == nil || !logContains(proc.logPath, "address already in use") {
			return nil, err
		}
		p.logf("Restarting %s on other ports: %v", proc.name, err)
	}
}

// FreePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. Another process may take one before the caller binds it.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Held open until every port is chosen, so that the n differ.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func logContains(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}
