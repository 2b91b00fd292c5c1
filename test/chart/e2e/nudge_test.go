package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/test/chart/charttest"
)

// nudge is one nudge process run from the binary.
type nudge struct {
	cmd  *exec.Cmd
	args []string
	log  string // path
	done chan error
}

// start runs the nudge binary as the chart's Deployment would run it: its
// args ($(POD_NAMESPACE) expanded as the kubelet does), POD_NAMESPACE, and
// the ServiceAccount's token as its only credential. Only the metrics and
// probe servers are off, as their ports could clash, and API discovery is
// polled every second.
func start(t *testing.T, r *release) *nudge {
	t.Helper()
	g := NewWithT(t)
	sa := r.deploy.Spec.Template.Spec.ServiceAccountName
	token, err := kubectl(t, "create", "token", sa, "-n", r.namespace, "--duration", "2h")
	g.Expect(err).NotTo(HaveOccurred(), "kubectl create token: %s", token)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	admin := plane.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testbed"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(token)}
	kc.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: sa}
	kc.CurrentContext = "testbed"
	g.Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())

	c := r.deploy.Spec.Template.Spec.Containers[0]
	var args []string
	for _, a := range c.Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", r.namespace))
	}
	args = mountConfigMaps(t, r, dir, args)
	// Discovery polled every second rather than every 30 s, for the tests
	// that install Argo Rollouts after nudge.
	args = append(args, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--discovery-interval=1s")
	n := &nudge{args: args, log: filepath.Join(dir, "nudge.log"), done: make(chan error, 1)}
	logFile, err := os.Create(n.log)
	g.Expect(err).NotTo(HaveOccurred())
	n.cmd = exec.Command(nudgeBin, args...)
	n.cmd.Env = []string{"POD_NAMESPACE=" + r.namespace, "HOME=" + dir}
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	g.Expect(n.cmd.Start()).To(Succeed())
	go func() { n.done <- n.cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		n.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(n.log)
			t.Logf("nudge %s's log:\n%s", strings.Join(args, " "), b)
		}
	})
	g.Eventually(n.logs).WithTimeout(30*time.Second).Should(ContainSubstring("Starting nudge"), "nudge started")
	return n
}

// logs returns nudge's log so far.
func (n *nudge) logs() string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

// stop sends nudge SIGTERM and waits up to 30 s for it to exit; it fails t
// when nudge had already stopped or exits with an error. Stopping twice is
// harmless.
func (n *nudge) stop(t *testing.T) {
	t.Helper()
	if n.cmd.ProcessState != nil {
		return
	}
	select {
	case err := <-n.done:
		t.Errorf("nudge stopped by itself: %v", err)
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("nudge exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
		t.Errorf("nudge did not stop within 30 s of SIGTERM")
	}
}

// expectNoForbidden fails t when nudge's log holds a refused request.
func (n *nudge) expectNoForbidden(t *testing.T) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(n.logs()))
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), "forbidden") {
			t.Errorf("nudge was refused a request: %s", sc.Text())
		}
	}
}

// auditEvent is what the tests read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb, Resource, Namespace, Name, URI string
	Code                                 int
}

// requestsOf returns the requests of user in the plane's audit log, and
// fails t for every one that was refused.
func requestsOf(t *testing.T, user string) []auditEvent {
	t.Helper()
	var out []auditEvent
	_, err := testbed.ReadAuditLog(plane.AuditLogPath(), 0, user, func(e testbed.AuditEvent) {
		ev := auditEvent{Verb: e.Verb, Resource: e.Resource(), URI: e.RequestURI, Code: e.Code()}
		if e.ObjectRef != nil {
			ev.Namespace, ev.Name = e.ObjectRef.Namespace, e.ObjectRef.Name
		}
		if ev.Code == 403 {
			t.Errorf("%s was refused: %+v", user, ev)
		}
		out = append(out, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("No request of %s in the audit log", user)
	}
	return out
}

// mountConfigMaps writes the files of the container's ConfigMap volumes
// (the chart's customKinds), from the rendered ConfigMaps, under dir as the
// kubelet would mount them, and returns args with their mount paths moved
// there.
func mountConfigMaps(t *testing.T, r *release, dir string, args []string) []string {
	t.Helper()
	pod := r.deploy.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := &corev1.ConfigMap{}
			charttest.Into(t, r.m.Get("ConfigMap", v.ConfigMap.Name), cm)
			local := filepath.Join(dir, m.MountPath)
			if err := os.MkdirAll(local, 0o700); err != nil {
				t.Fatal(err)
			}
			for name, data := range cm.Data {
				if err := os.WriteFile(filepath.Join(local, name), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], m.MountPath, local)
			}
		}
	}
	return args
}
