// Package binary runs the nudge binary, built from this tree, as a user runs
// it by hand or from a Reloader Deployment whose image was swapped: bare
// flags, no chart, no nudge-system namespace.
package binary

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

var (
	plane *testbed.Plane
	k8s   client.Client
	// nudgeBin is the nudge binary built from this tree.
	nudgeBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return nudgetest.MainWithBinary(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane, bin string) {
		plane, nudgeBin = p, bin
		c, err := nudgetest.Client(p.Config())
		if err != nil {
			panic(err)
		}
		k8s = c
	})
}

// kubeconfig writes the plane's admin kubeconfig with its current context's
// namespace set to ns (none when ""), and returns its path.
func kubeconfig(t *testing.T, ns string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(plane.Kubeconfig())
	if err != nil {
		t.Fatalf("reading the plane's kubeconfig: %v", err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = ns
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs nudge with args and only the environment env (no
// $POD_NAMESPACE unless given); it is stopped when t ends.
func start(t *testing.T, env []string, args ...string) *nudgetest.Process {
	t.Helper()
	return nudgetest.StartProcess(t, nudgeBin, env, args...)
}

// keySecret returns a func that reports whether nudge's key Secret exists
// in ns.
func keySecret(ctx context.Context, ns string) func() error {
	return func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nudge-fingerprint-key"}, &corev1.Secret{})
	}
}

// noNudgeSystem checks that the plane has no nudge-system namespace, the
// condition these tests are about.
func noNudgeSystem(t *testing.T, g Gomega) {
	t.Helper()
	err := k8s.Get(t.Context(), client.ObjectKey{Name: "nudge-system"}, &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no nudge-system namespace: %v", err)
}

// The bare binary, run outside a cluster with a kubeconfig and no flag
// about its namespace, keeps its key in the kubeconfig context's namespace
// and starts; there is no nudge-system namespace.
func TestBareBinaryKeepsItsKeyInTheContextNamespace(t *testing.T) {
	g := NewWithT(t)
	noNudgeSystem(t, g)
	ns, err := plane.GenerateNamespace(t.Context(), "bin-")
	g.Expect(err).NotTo(HaveOccurred())
	probe := nudgetest.FreeAddr(t)
	p := start(t, nil, "--kubeconfig="+kubeconfig(t, ns), "--metrics-bind-address=0", "--health-probe-bind-address="+probe,
		"--namespaces="+ns)
	g.Eventually(keySecret(t.Context(), ns)).WithTimeout(30*time.Second).Should(Succeed(), "nudge's key Secret in namespace %s", ns)
	g.Eventually(func() string { return nudgetest.Get("http://" + probe + "/readyz") }).WithTimeout(30*time.Second).Should(Equal("ok"), "nudge ready")
	g.Expect(p.Output()).To(ContainSubstring("systemNamespace="+ns), "the log names where the key is")
	g.Expect(p.Exited()).To(BeFalse())
	noNudgeSystem(t, g)
}

// With $POD_NAMESPACE (set by a Deployment's downward API), the key is kept
// there.
func TestBareBinaryKeepsItsKeyInPodNamespace(t *testing.T) {
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "bin-pod-")
	g.Expect(err).NotTo(HaveOccurred())
	start(t, []string{"POD_NAMESPACE=" + ns}, "--kubeconfig="+kubeconfig(t, ""), "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--namespaces="+ns)
	g.Eventually(keySecret(t.Context(), ns)).WithTimeout(30*time.Second).Should(Succeed(), "nudge's key Secret in $POD_NAMESPACE %s", ns)
}

// A system namespace that does not exist stops nudge at start with a
// message naming the flag to set.
func TestBareBinaryWithoutItsNamespaceNamesTheFlag(t *testing.T) {
	g := NewWithT(t)
	noNudgeSystem(t, g)
	p := start(t, nil, "--kubeconfig="+kubeconfig(t, ""), "--system-namespace=nudge-system", "--metrics-bind-address=0",
		"--health-probe-bind-address=0")
	g.Eventually(p.Exited).WithTimeout(30*time.Second).Should(BeTrue(), "nudge to stop")
	g.Expect(p.Err()).To(HaveOccurred(), "a non-zero exit")
	g.Expect(p.Output()).To(And(ContainSubstring(`namespace "nudge-system"`), ContainSubstring("set --system-namespace")))
}

// A Reloader Deployment's args, image swapped: nudge starts with them,
// waits for the Secrets Store CSI driver's kind with --enable-csi-integration, and serves Reloader's
// metrics (by namespace with METRICS_COUNT_BY_NAMESPACE=enabled).
func TestReloaderArgsStartTheBinary(t *testing.T) {
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "bin-reloader-")
	g.Expect(err).NotTo(HaveOccurred())
	addrs := nudgetest.FreeAddrs(t, 3)
	metrics, probe, pprof := addrs[0], addrs[1], addrs[2]
	p := start(t, []string{"POD_NAMESPACE=" + ns, "KUBERNETES_NAMESPACE=" + ns, "METRICS_COUNT_BY_NAMESPACE=enabled"},
		"--kubeconfig="+kubeconfig(t, ""), "--metrics-addr="+metrics, "--health-addr="+probe,
		"--log-format=json", "--resources-to-ignore=secrets", "--namespaces-to-ignore=kube-system",
		`--namespace-selector="kubernetes.io/metadata.name:`+ns+`"`, "--resource-label-selector=reload:*",
		"--configmap-annotation", "acme.io/configmaps", "--auto-annotation", "acme.io/auto",
		"--is-Argo-Rollouts=true", "--reload-on-create=true", "--sync-after-restart=true",
		"--reload-strategy=annotations", "--enable-ha=true", "--enable-pprof", "--pprof-addr="+pprof,
		"--enable-csi-integration=true", "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s",
		"--leader-election-retry-period=2s", "--log-level=info")
	g.Eventually(func() string { return nudgetest.Get("http://" + probe + "/readyz") }).WithTimeout(30*time.Second).Should(Equal("ok"), "nudge ready")
	g.Eventually(func() string { return nudgetest.Get("http://" + metrics + "/metrics") }).WithTimeout(30*time.Second).Should(
		ContainSubstring(`reloader_reload_executed_total{success="true"} 0`), "Reloader's counter at 0")
	g.Expect(nudgetest.Get("http://"+pprof+"/debug/pprof/")).NotTo(BeEmpty(), "pprof on --pprof-addr")
	g.Eventually(p.Output).WithTimeout(30*time.Second).Should(ContainSubstring("SecretProviderClassPodStatus"),
		"--enable-csi-integration waits for (or watches) the Secrets Store CSI driver's kind")
	g.Expect(p.Exited()).To(BeFalse())
}

// A nudge started with an alert sink publishes its settings without the
// sink's token or its proxy's password: anyone who may read ConfigMaps in
// nudge's namespace reads that ConfigMap, and kubectl nudge explain prints it.
func TestSettingsHoldNoAlertCredential(t *testing.T) {
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "bin-settings-")
	g.Expect(err).NotTo(HaveOccurred())
	start(t, []string{"POD_NAMESPACE=" + ns}, "--kubeconfig="+kubeconfig(t, ""), "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--namespaces="+ns, "--alert-sink=slack",
		"--alert-webhook-url=https://hooks.example/T0KEN", "--alert-proxy=http://u:pw@proxy:3128")
	var cm corev1.ConfigMap
	g.Eventually(func() error {
		return k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "nudge-settings"}, &cm)
	}).WithTimeout(30*time.Second).Should(Succeed(), "nudge's settings ConfigMap in namespace %s", ns)
	g.Expect(cm.Data["args"]).To(ContainSubstring("--alert-sink=slack"), "the settings are published")
	for k, v := range cm.Data {
		g.Expect(v).NotTo(Or(ContainSubstring("T0KEN"), ContainSubstring("pw@")), "data key %s", k)
	}
}
