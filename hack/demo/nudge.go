package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"nudge.dev/nudge/internal/testbed"
)

const (
	// systemNamespace holds nudge's key Secret.
	systemNamespace = "nudge-system"
	// readyTimeout bounds the wait for nudge's /readyz.
	readyTimeout = 60 * time.Second
	// stopGrace is how long nudge has to exit after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// portAttempts is how many times nudge is started on fresh ports when
	// another process took one of them in between.
	portAttempts = 3
)

// nudgeProcess is the nudge binary running as a child of the demo. Every
// line it writes goes to its log file; the lines a user cares about also go
// to a sink, which prints them unless the timeline has taken them over.
type nudgeProcess struct {
	cmd       *exec.Cmd
	logPath   string
	probeAddr string
	done      chan struct{} // closed once nudge has exited and its output is read
	exitErr   error         // how nudge exited; read only after done is closed

	mu   sync.Mutex
	sink func(logLine)
}

// startNudge creates nudge's namespace, starts the nudge binary bin against
// plane on free loopback ports, and returns once nudge's /readyz answers.
// Its log is nudge.log in the plane's directory, kept with the plane's logs.
// The error says why nudge did not become ready, with the end of its log.
func startNudge(ctx context.Context, p *printer, plane *testbed.Plane, bin string) (*nudgeProcess, error) {
	p.step("Starting nudge (%s) in namespace %s", bin, systemNamespace)
	if err := plane.CreateNamespace(ctx, systemNamespace); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", systemNamespace, err)
	}
	logPath := filepath.Join(plane.Dir(), "nudge.log")
	for attempt := 1; ; attempt++ {
		begin := time.Now()
		ports, err := testbed.FreePorts(2)
		if err != nil {
			return nil, err
		}
		probeAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
		args := []string{
			"--kubeconfig", plane.Kubeconfig(),
			"--system-namespace", systemNamespace,
			"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[0]),
			"--health-probe-bind-address", probeAddr,
			"--log-format", "json", // one JSON object a line: see parseLogLine
		}
		n, err := execNudge(bin, args, probeAddr, logPath, func(l logLine) { p.detailf("nudge | %s", l.display()) })
		if err != nil {
			return nil, err
		}
		err = n.waitReady(ctx)
		if err == nil {
			p.detailf("nudge (pid %d) ready in %v: metrics on 127.0.0.1:%d, probes on %s, log %s",
				n.cmd.Process.Pid, time.Since(begin).Round(time.Millisecond), ports[0], n.probeAddr, logPath)
			return n, nil
		}
		stopErr := n.stop()
		if attempt == portAttempts || !strings.Contains(n.logTail(), "address already in use") {
			return nil, errors.Join(err, stopErr)
		}
		p.detailf("nudge could not bind its ports; trying others")
	}
}

// execNudge starts bin with args, its output appended to logPath and its
// interesting lines passed to sink. probeAddr is where args make it serve
// /readyz.
func execNudge(bin string, args []string, probeAddr, logPath string, sink func(logLine)) (*nudgeProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating nudge's log: %w", err)
	}
	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("creating nudge's output pipe: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	w.Close() // nudge holds its own descriptor: r reaches EOF when nudge exits
	if err != nil {
		r.Close()
		logFile.Close()
		return nil, fmt.Errorf("starting nudge: %w", err)
	}
	n := &nudgeProcess{cmd: cmd, logPath: logPath, probeAddr: probeAddr, done: make(chan struct{}), sink: sink}
	go func() {
		defer close(n.done)
		n.copyOutput(r, logFile)
		r.Close()
		logFile.Close()
		n.exitErr = cmd.Wait()
	}()
	return n, nil
}

// copyOutput copies nudge's output from r to the log file line by line,
// handing the interesting lines to the sink, until nudge exits.
func (n *nudgeProcess) copyOutput(r io.Reader, logFile io.Writer) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		raw := scanner.Text()
		fmt.Fprintln(logFile, raw)
		if l := parseLogLine(raw); l.interesting() {
			n.mu.Lock()
			sink := n.sink
			n.mu.Unlock()
			sink(l)
		}
	}
	// A read error here means nudge is gone; Wait reports how it ended.
	_, _ = io.Copy(logFile, r)
}

// divert sends nudge's interesting lines to sink until the returned function
// is called, which restores the previous sink.
func (n *nudgeProcess) divert(sink func(logLine)) (restore func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	previous := n.sink
	n.sink = sink
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.sink = previous
	}
}

// waitReady polls nudge's /readyz until it answers 200. It fails when nudge
// exits, when ctx ends, or after readyTimeout, with the end of nudge's log.
func (n *nudgeProcess) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	url := "http://" + n.probeAddr + "/readyz"
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		last = get(ctx, client, url)
		if last == nil {
			return nil
		}
		select {
		case <-n.done:
			return fmt.Errorf("waiting for nudge to be ready: %w", n.exited())
		case <-ctx.Done():
			return fmt.Errorf("waiting for nudge's %s: %w (last: %v); log %s ends with:\n%s", url, ctx.Err(), last, n.logPath, n.logTail())
		case <-ticker.C:
		}
	}
}

// get returns nil when url answers 200 OK.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// stop sends nudge SIGTERM, then SIGKILL if it has not exited after
// stopGrace, and returns once it has exited. Signals go through os.Process
// (a pidfd on Linux), so they reach nudge alone, never a process that
// reused its PID.
func (n *nudgeProcess) stop() error {
	select {
	case <-n.done:
		return nil
	default:
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGTERM to nudge (pid %d): %w", n.cmd.Process.Pid, err)
	}
	select {
	case <-n.done:
		return nil
	case <-time.After(stopGrace):
	}
	if err := n.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGKILL to nudge (pid %d): %w", n.cmd.Process.Pid, err)
	}
	select {
	case <-n.done:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("nudge (pid %d) did not exit after SIGKILL", n.cmd.Process.Pid)
	}
}

// exited returns the error that says nudge exited, how, and with which last
// lines of log. Call it once done is closed.
func (n *nudgeProcess) exited() error {
	how := "with status 0"
	if n.exitErr != nil {
		how = n.exitErr.Error()
	}
	return fmt.Errorf("nudge exited (%s); log %s ends with:\n%s", how, n.logPath, n.logTail())
}

// logTail returns the last 20 lines of nudge's log, or why it cannot.
func (n *nudgeProcess) logTail() string {
	data, err := os.ReadFile(n.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
