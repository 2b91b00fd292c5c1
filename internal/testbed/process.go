package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a component has to exit after SIGTERM before it is
// sent SIGKILL.
const stopGrace = 5 * time.Second

// process is one running component. Its output goes to a log file of its
// own; a goroutine reaps it as soon as it exits.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has exited and been reaped
	err     error         // the exit status; read only after done is closed
}

// startProcess starts bin with args in a process group of its own, so that a
// Ctrl-C in the terminal reaches the test binary alone (which then stops the
// plane in order), and with a parent-death signal (see sysProcAttr) so that
// nothing survives a test binary that crashed or was killed.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating log of %s: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor

	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process ID of the component.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exitError returns a non-nil error saying how the process ended, with the
// tail of its log, once it has exited; nil while it runs.
func (p *process) exitError() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); log %s ends with:\n%s", p.name, p.err, p.logPath, p.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL if the process has not exited after grace,
// and returns once it has been reaped. Signals go through os.Process, which
// on Linux uses a pidfd: they can only reach the process this package
// started, never a later process that reused its PID.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGTERM to %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	return p.kill(grace)
}

// logTail returns the last lines of the process's log.
func (p *process) logTail() string {
	return tail(p.logPath, 40)
}

// tail returns at most the last n lines of the file at path (reading at most
// its last 16 KiB), or a note saying why it could not.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxBytes = 16 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return fmt.Sprintf("(cannot read log: %v)", err)
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// kill sends SIGKILL and returns once the process has been reaped, or an
// error if it has not within grace.
func (p *process) kill(grace time.Duration) error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGKILL to %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}
