package nudgetest

import (
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
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"nudge.dev/nudge/internal/testbed"
)

// MainWithBinary is a TestMain body for tests of the nudge binary: it
// builds the binary into a temporary directory, starts a plane as
// testbed.Main does, calls setup with the plane and the binary's path, and
// runs m. It returns the exit code; the directory is removed when m ends.
func MainWithBinary(m *testing.M, opts testbed.Options, setup func(p *testbed.Plane, bin string)) int {
	dir, err := os.MkdirTemp("", "nudge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := BuildBinary(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testbed.Main(m, opts, func(p *testbed.Plane) { setup(p, bin) })
}

// BuildBinary builds the nudge binary (nudge.dev/nudge/cmd/nudge) into dir
// with `go build` and returns its path, or an error with go's output.
func BuildBinary(dir string) (string, error) {
	bin := filepath.Join(dir, "nudge")
	if out, err := exec.Command("go", "build", "-o", bin, "nudge.dev/nudge/cmd/nudge").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building nudge: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is the nudge binary running as a process of its own, as a user
// runs it: it can be killed (SIGKILL) where an in-process nudge can only be
// stopped.
type Process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
	err  error // the exit status; read only after done is closed
}

// StartProcess runs bin (nudge, or another binary a test runs beside it)
// with args and only the environment env (no
// $POD_NAMESPACE unless given; $HOME a temporary directory), its standard
// output and error kept (Output). When t ends it is stopped with SIGTERM
// (SIGKILL and an error after 30 s) and, if t failed, its output is logged.
// On Linux the kernel kills it if the test binary dies.
func StartProcess(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append([]string{"HOME=" + t.TempDir()}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", filepath.Base(bin), err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = p.Kill()
				t.Errorf("%s (pid %d) did not stop within 30 s of SIGTERM", filepath.Base(bin), p.PID())
			}
		}
		if t.Failed() {
			KeepOutput(t, fmt.Sprintf("the output of %s (pid %d) %s", filepath.Base(bin), p.PID(), strings.Join(args, " ")), p.Output())
		}
	})
	return p
}

// Write appends to the output; the process writes through it.
func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output returns what the process wrote so far, standard output and error.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// PID returns the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether nudge has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns how nudge exited (nil for status 0), or nil while it runs.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Kill sends SIGKILL (kill -9: no cleanup, no lease released, requests in
// flight cut) and returns once the process is reaped, or an error if it is
// not within 10 s.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing nudge (pid %d): %w", p.PID(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("nudge (pid %d) was not reaped within 10 s of SIGKILL", p.PID())
	}
}

// WriteKubeconfig writes a kubeconfig file at path for cfg (its server, CA
// and client certificate, embedded), with namespace as its context's
// namespace ("" for none), for a nudge started with --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config, namespace string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: namespace}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago
// (testbed.FreePorts), for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs returns n 127.0.0.1 addresses of different ports, each free a
// moment ago, for the servers of one process: two FreeAddr calls may
// return the same port (it happened: a nudge's metrics and probe servers
// on one port, test/image, 28 Nov 2026).
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	ports, err := testbed.FreePorts(n)
	if err != nil {
		t.Fatalf("finding %d free ports: %v", n, err)
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return addrs
}

// Get returns the body of an HTTP GET of url, "" when it fails or its
// status is not 200 OK.
func Get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}
