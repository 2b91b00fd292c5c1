package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// helperEnv makes the test binary run helperPlane instead of the tests: a
// process of its own that starts a plane for the signal tests to signal.
const helperEnv = "TESTBED_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "1":
		os.Exit(helperPlane())
	case "caller":
		os.Exit(helperCallerHandlesSignals())
	}
	os.Exit(m.Run())
}

// helperPlane starts an apiserver plane, prints "PLANE <dir> <pid>..." on
// standard output, and waits a minute to be signalled.
func helperPlane() int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := Start(ctx, Options{Mode: APIServer})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("PLANE %s %s\n", p.Dir(), strings.Trim(fmt.Sprint(p.pids()), "[]"))
	time.Sleep(time.Minute)
	_ = p.Stop(false)
	return 3 // not signalled
}

// helperCallerHandlesSignals starts an apiserver plane with
// CallerHandlesSignals and a SIGINT handler of its own, prints "PLANE <dir>
// <pid>...", and once signalled checks for 2 s that the plane still serves
// before stopping it: exit 0 if it did, 4 if not, 3 if never signalled.
func helperCallerHandlesSignals() int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := Start(ctx, Options{Mode: APIServer, CallerHandlesSignals: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = p.Stop(false) }()
	fmt.Printf("PLANE %s %s\n", p.Dir(), strings.Trim(fmt.Sprint(p.pids()), "[]"))
	select {
	case <-signals:
	case <-time.After(time.Minute):
		return 3
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := p.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "The plane stopped serving after SIGINT: %v\n", err)
			return 4
		}
	}
	return 0
}

// With CallerHandlesSignals, a signal is the caller's alone: the plane keeps
// serving until the caller stops it.
func TestCallerHandlesSignals(t *testing.T) {
	g := NewWithT(t)
	helper, pids := startHelper(t, "caller")

	g.Expect(helper.Process.Signal(syscall.SIGINT)).To(Succeed())
	g.Expect(waitExit(helper, 30*time.Second)).To(Succeed(), "the helper's plane served for 2 s after SIGINT, then the helper stopped it")
	for _, pid := range pids {
		g.Expect(processGone(pid)).To(BeTrue(), "process %d of the plane is gone once the helper stopped it", pid)
	}
}

func TestSIGINTStopsThePlane(t *testing.T) {
	g := NewWithT(t)
	helper, pids := startHelper(t, "1")

	g.Expect(helper.Process.Signal(syscall.SIGINT)).To(Succeed())
	err := waitExit(helper, 30*time.Second)
	var exit *exec.ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue(), "the helper ends with an exit error, got %v", err)
	status := exit.Sys().(syscall.WaitStatus)
	g.Expect(status.Signaled() && status.Signal() == syscall.SIGINT).To(BeTrue(),
		"the helper re-raised SIGINT after stopping its plane, got %v", status)
	for _, pid := range pids {
		g.Expect(processGone(pid)).To(BeTrue(), "process %d of the plane is gone once the helper exited", pid)
	}
}

func TestSIGKILLOfTheTestBinaryKillsThePlane(t *testing.T) {
	g := NewWithT(t)
	helper, pids := startHelper(t, "1")

	g.Expect(helper.Process.Kill()).To(Succeed())
	_ = waitExit(helper, 30*time.Second)
	for _, pid := range pids {
		g.Eventually(func() bool { return processGone(pid) }).WithTimeout(10*time.Second).Should(BeTrue(),
			"process %d of the plane dies with the process that started it (parent-death signal)", pid)
	}
	// The dead components are orphans: init reaps them. Give it a moment,
	// so that no zombie outlives the test, without making this a condition.
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// startHelper runs the helper that helperEnv=which selects (see TestMain)
// in a new process and returns it with the PIDs of its plane's processes
// once the plane is up. Cleanup kills the helper and removes the plane's
// directory.
func startHelper(t *testing.T, which string) (*exec.Cmd, []int) {
	t.Helper()
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), helperEnv+"="+which)
	helper.Stderr = os.Stderr
	helper.SysProcAttr = sysProcAttr()
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatalf("Starting the helper: %v", err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill() })

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "PLANE ") {
				line <- sc.Text()
				return
			}
		}
		close(line)
	}()
	var fields []string
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("The helper exited without starting its plane")
		}
		fields = strings.Fields(l)
	case <-time.After(startTimeout):
		t.Fatalf("Waited %v for the helper's plane to start", startTimeout)
	}
	dir := fields[1]
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // kept by the signalled helper, or abandoned
	var pids []int
	for _, f := range fields[2:] {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("Parsing the helper's PIDs %q: %v", fields, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("The helper's apiserver plane has %d processes, want 2 (etcd, kube-apiserver)", len(pids))
	}
	return helper, pids
}

// waitExit waits up to timeout for cmd to exit and returns cmd.Wait's error.
func waitExit(cmd *exec.Cmd, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("process %d still running after %v", cmd.Process.Pid, timeout)
	}
}

// processGone reports whether no process pid runs: there is none, or only
// its zombie, waiting for a parent that is not this process to reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}
