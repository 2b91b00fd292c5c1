package testbed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
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
// ago. They are drawn from below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; 32768 when unreadable), which
// the outgoing connections of every test take their local ports from: a
// port from the ephemeral range (":0") can be taken by a client connection
// between the moment it is found free and the moment it is bound. Another
// process may still bind one first; the starts retry (portAttempts).
func FreePorts(n int) ([]int, error) {
	low := ephemeralLow()
	ports := make([]int, 0, n)
	for attempt := 0; len(ports) < n; attempt++ {
		if attempt == 1000 {
			return nil, fmt.Errorf("finding %d free ports below %d: only %d after 1,000 tries", n, low, len(ports))
		}
		port := minPort + rand.IntN(low-minPort)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		// Held open until every port is chosen, so that the n differ.
		defer l.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

// minPort is the lowest port FreePorts hands out: above the well-known and
// most registered services' ports.
const minPort = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= minPort+1000 {
		return 32768
	}
	return low
}

func logContains(path, s string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), s)
}
