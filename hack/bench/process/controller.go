// Package process runs the controller under test (or the floor) as a
// process of its own, through sh and, with -cgroup, in a memory cgroup, and
// reads its memory and CPU from /proc: one sample (Stats), or a window of
// samples once it is quiet (MemoryWindow).
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"nudge.dev/nudge/hack/bench/cgroup"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// Controller is the controller under test, run as a process of its own.
type Controller struct {
	cmd      *exec.Cmd
	started  time.Time
	logPath  string
	probeURL string // /readyz, when the command line has {probe-addr}
	pprofURL string // /debug/pprof, when the command line has {pprof-addr}
	done     chan struct{}
	err      error // exit status, once done is closed
	// cgroup is the controller's memory cgroup, nil without -cgroup;
	// peakWorkingSet the largest working set sampled in it (see
	// sampleWorkingSet), in bytes.
	cgroup         *cgroup.Group
	peakWorkingSet atomic.Int64
}

// workingSetEvery is how often the working set of a controller in a cgroup
// of its own is sampled for its peak.
const workingSetEvery = 250 * time.Millisecond

// Start runs cmdline through sh -c 'exec …', so that the shell
// becomes the controller and its PID is the controller's, with {kubeconfig},
// {metrics-addr}, {probe-addr} and {pprof-addr} replaced, appending its output to logPath.
// It runs in a process group of its own and is killed if the benchmark dies.
// With group, it runs in that memory cgroup, which it removes once the
// controller has exited, and its working set is sampled for the peak.
func Start(cmdline, kubeconfig, logPath string, group *cgroup.Group) (*Controller, error) {
	vars := map[string]string{"{kubeconfig}": kubeconfig}
	c := &Controller{logPath: logPath, done: make(chan struct{}), cgroup: group}
	for _, name := range []string{"{metrics-addr}", "{probe-addr}", "{pprof-addr}"} {
		if !strings.Contains(cmdline, name) {
			continue
		}
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		vars[name] = addr
		switch name {
		case "{probe-addr}":
			c.probeURL = "http://" + addr + "/readyz"
		case "{pprof-addr}":
			c.pprofURL = "http://" + addr + "/debug/pprof"
		}
	}
	for k, v := range vars {
		cmdline = strings.ReplaceAll(cmdline, k, v)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	fmt.Fprintf(log, "# %s\n", cmdline)
	script := "exec " + cmdline
	if group != nil {
		// The shell enters the cgroup, then execs the controller: it is
		// charged for every page it touches from its first.
		script = "echo $$ >" + Quote(group.Procs()) + " && exec " + cmdline
	}
	c.cmd = exec.Command("sh", "-c", script)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	c.started = time.Now()
	go func() {
		c.err = c.cmd.Wait()
		if group != nil {
			c.err = errors.Join(c.err, group.Remove())
		}
		close(c.done)
	}()
	if group != nil {
		go c.sampleWorkingSet()
	}
	return c, nil
}

// Started returns when the controller was started.
func (c *Controller) Started() time.Time { return c.started }

// PprofURL returns the controller's /debug/pprof URL, "" when its command
// line has no {pprof-addr}.
func (c *Controller) PprofURL() string { return c.pprofURL }

// sampleWorkingSet keeps the largest working set of the controller's cgroup
// in peakWorkingSet, every workingSetEvery until it exits.
func (c *Controller) sampleWorkingSet() {
	tick := time.NewTicker(workingSetEvery)
	defer tick.Stop()
	for {
		if m, err := c.cgroup.Read(); err == nil && m.WorkingSet() > c.peakWorkingSet.Load() {
			c.peakWorkingSet.Store(m.WorkingSet())
		}
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
	}
}

// Exited returns an error saying how the controller ended, with the tail of
// its log, once it has exited; nil while it runs.
func (c *Controller) Exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("the controller exited (%v); its log %s ends with:\n%s", c.err, c.logPath, tailFile(c.logPath, 30))
	default:
		return nil
	}
}

// Kill sends SIGKILL and returns once the controller has exited.
func (c *Controller) Kill() error {
	if c.Exited() != nil {
		return nil
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-c.done
	return nil
}

// Stop sends SIGTERM, then SIGKILL after grace, and returns once the
// controller has exited.
func (c *Controller) Stop(grace time.Duration) error {
	if c.Exited() != nil {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("the controller (pid %d) did not exit after SIGKILL", c.cmd.Process.Pid)
	}
}

// Stats is what /proc says of the controller at one moment.
type Stats struct {
	At         time.Time
	RSSBytes   int64   // VmRSS
	PeakBytes  int64   // VmHWM: the peak RSS since start
	AnonBytes  int64   // RssAnon: heap, stacks (the rest of RSS is the mapped binary and shared memory)
	FileBytes  int64   // RssFile: file-backed pages mapped, the binary's above all
	CPUSeconds float64 // user + system, all threads, since start
	Threads    int
	// Cgroup is the controller's memory cgroup, and PeakWorkingSetBytes
	// the largest working set sampled in it since start; nil and 0
	// without -cgroup.
	Cgroup              *cgroup.Memory
	PeakWorkingSetBytes int64
}

// Stats reads the controller's memory and CPU from /proc, and with
// -cgroup its cgroup's.
func (c *Controller) Stats() (Stats, error) {
	s, err := ReadStats(c.cmd.Process.Pid)
	if err != nil {
		return s, fmt.Errorf("reading the controller's memory and CPU: %w", err)
	}
	if c.cgroup != nil {
		m, err := c.cgroup.Read()
		if err != nil {
			return s, fmt.Errorf("reading the controller's cgroup: %w", err)
		}
		s.Cgroup = &m
		s.PeakWorkingSetBytes = max(c.peakWorkingSet.Load(), m.WorkingSet())
	}
	return s, nil
}

// ReadStats reads the memory and CPU of process pid from
// /proc/PID/status and /proc/PID/stat (proc(5)).
func ReadStats(pid int) (Stats, error) {
	s := Stats{At: time.Now()}
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return s, err // the path is in it
	}
	for _, line := range strings.Split(string(status), "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.Fields(value + " 0")[0], 10, 64)
		switch field {
		case "VmRSS":
			s.RSSBytes = n << 10
		case "VmHWM":
			s.PeakBytes = n << 10
		case "RssAnon":
			s.AnonBytes = n << 10
		case "RssFile":
			s.FileBytes = n << 10
		case "Threads":
			s.Threads = int(n)
		}
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return s, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15 (proc(5)).
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return s, fmt.Errorf("short %s/stat", dir)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	s.CPUSeconds = float64(utime+stime) / clockTicks
	return s, nil
}

// WaitReady polls /readyz until it answers 200 and returns when it did; the
// zero time when the command has no {probe-addr}, or on timeout.
func (c *Controller) WaitReady(ctx context.Context, timeout time.Duration) time.Time {
	if c.probeURL == "" {
		return time.Time{}
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil && c.Exited() == nil {
		if resp, err := client.Get(c.probeURL); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Quote returns s quoted for sh when it holds anything but plain
// characters.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
