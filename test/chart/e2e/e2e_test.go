// Package e2e installs nudge's chart on the full local plane and runs the
// nudge binary with the chart's ServiceAccount token as its only identity,
// in each RBAC mode: it must roll what is in its scope, neither read nor
// roll what is not, and never be refused a request.
//
// The chart's own Deployment runs too, as kwok fake pods (no image runs);
// they show that its pods pass the "restricted" Pod Security Standard.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/controller"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
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
	dir, err := os.MkdirTemp("", "nudge-chart-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nudgeBin = filepath.Join(dir, "nudge")
	if out, err := exec.Command("go", "build", "-o", nudgeBin, "nudge.dev/nudge/cmd/nudge").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building nudge: %v\n%s", err, out)
		return 1
	}
	return testbed.Main(m, testbed.Options{Mode: testbed.Cluster, Nodes: 1, AuditLog: true}, func(p *testbed.Plane) {
		plane = p
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = apiextensionsv1.AddToScheme(scheme)
		c, err := client.New(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	})
}

var auto = map[string]string{"reloader.stakater.com/auto": "true"}

// The Magnum spec's install: watchGlobally=false in one namespace. nudge
// rolls there, and neither reads nor rolls the same workload next door. Argo
// Rollouts, installed after nudge started, is found by API discovery (no
// cluster-wide permission) and its Rollouts in the namespace handled too.
func TestNamespacedInstall(t *testing.T) {
	g := NewWithT(t)
	removeRolloutCRD(t) // whatever test ran before: installed after nudge starts
	ns, other := namespace(t, "chart-ns-"), namespace(t, "chart-other-")
	rel := install(t, "nudge", ns, charttest.Values{"reloader": map[string]any{"watchGlobally": false}})
	n := start(t, rel)
	g.Expect(n.logs()).To(ContainSubstring("Waiting for the API server to serve a kind"), "Argo Rollouts not installed yet")

	app(t, ns, "web")
	app(t, other, "web")
	baselined(t, ns, "web")
	installRolloutCRD(t)
	rollout, outside := argoRollout(ns, "canary"), argoRollout(other, "canary")
	g.Expect(k8s.Create(t.Context(), rollout)).To(Succeed())
	g.Expect(k8s.Create(t.Context(), outside)).To(Succeed())
	rolloutBaselined(t, rollout)

	changeConfigMap(t, ns, "web")
	changeConfigMap(t, other, "web")
	g.Eventually(replicaSets(t, ns, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in the release namespace")
	rolloutRolled(t, rollout)
	g.Consistently(replicaSets(t, other, "web")).WithTimeout(5*time.Second).Should(Equal(1), "no rollout outside it")
	var d appsv1.Deployment
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: other, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Annotations).NotTo(HaveKey(controller.AppliedAnnotation), "never seen outside it")
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(outside), outside)).To(Succeed())
	g.Expect(outside.GetAnnotations()).NotTo(HaveKey(controller.AppliedAnnotation), "no Rollout seen outside it")
	g.Expect(outside.GetGeneration()).To(Equal(int64(1)), "no Rollout rolled outside it")

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		if e.Resource != "" { // not discovery
			g.Expect(e.Namespace).To(Equal(ns), "only requests in %s, got %+v", ns, e)
		}
	}
}

// The default install: a ClusterRole. With two replicas (leader election,
// with a Lease named after the release) nudge rolls Deployments in any
// namespace, and Argo Rollouts once their CRD appears.
func TestGlobalInstall(t *testing.T) {
	g := NewWithT(t)
	removeRolloutCRD(t) // whatever test ran before: installed after nudge starts
	ns, a, b := namespace(t, "chart-global-"), namespace(t, "chart-a-"), namespace(t, "chart-b-")
	rel := install(t, "nudge-global", ns, charttest.Values{"replicas": 2})
	g.Expect(rel.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
	n := start(t, rel)
	g.Expect(n.args).To(ContainElements("--leader-elect", "--leader-election-id="+rel.deploy.Name))

	app(t, a, "web")
	app(t, b, "web")
	installRolloutCRD(t)
	rollout := argoRollout(a, "canary")
	g.Expect(k8s.Create(t.Context(), rollout)).To(Succeed())
	baselined(t, a, "web")
	baselined(t, b, "web")
	rolloutBaselined(t, rollout)

	changeConfigMap(t, a, "web")
	changeConfigMap(t, b, "web")
	g.Eventually(replicaSets(t, a, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", a)
	g.Eventually(replicaSets(t, b, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", b)
	rolloutRolled(t, rollout)
	var leases coordinationv1.LeaseList
	g.Expect(k8s.List(t.Context(), &leases, client.InNamespace(ns))).To(Succeed())
	g.Expect(leases.Items).To(ConsistOf(HaveField("Name", "nudge-global")), "one Lease, named after the release")
	g.Expect(leases.Items[0].Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())), "nudge elected itself")

	n.stop(t)
	n.expectNoForbidden(t)
	requestsOf(t, rel.user())
}

// watchGlobally with reloader.namespaces: the workload rules are bound in
// those namespaces alone; with ignoreSecrets, Secrets are not readable at
// all. nudge works within that, and leaves the rest unread.
func TestGlobalInstallLimitedToNamespaces(t *testing.T) {
	g := NewWithT(t)
	ns, a, b := namespace(t, "chart-some-"), namespace(t, "chart-a-"), namespace(t, "chart-b-")
	rel := install(t, "nudge-some", ns, charttest.Values{"reloader": map[string]any{"namespaces": a, "ignoreSecrets": true}})
	n := start(t, rel)

	app(t, a, "web")
	app(t, b, "web")
	baselined(t, a, "web")
	changeConfigMap(t, a, "web")
	changeConfigMap(t, b, "web")
	g.Eventually(replicaSets(t, a, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", a)
	g.Consistently(replicaSets(t, b, "web")).WithTimeout(5*time.Second).Should(Equal(1), "no rollout in %s", b)

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		g.Expect(e.Namespace).NotTo(Equal(b), "nothing read in %s, got %+v", b, e)
		if e.Resource == "secrets" {
			g.Expect(e).To(And(HaveField("Namespace", ns), HaveField("Name", "nudge-fingerprint-key")),
				"no Secret read but nudge's key")
		}
	}
}

// namespace creates a namespace whose pods must meet the "restricted" Pod
// Security Standard.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := plane.GenerateNamespace(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/warn":"restricted"}}}`)
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := k8s.Patch(t.Context(), obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	return ns
}

// release is the chart installed once.
type release struct {
	name, namespace string
	m               charttest.Manifest
	deploy          *appsv1.Deployment
}

// user returns the user name of the release's ServiceAccount.
func (r *release) user() string {
	return "system:serviceaccount:" + r.namespace + ":" + r.deploy.Spec.Template.Spec.ServiceAccountName
}

// install renders the chart with values and applies it with kubectl, then
// waits for the chart's (fake) pods to run.
func install(t *testing.T, name, ns string, values charttest.Values) *release {
	t.Helper()
	g := NewWithT(t)
	m, out, err := charttest.TryRender(t, name, ns, values)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	file := filepath.Join(t.TempDir(), "chart.yaml")
	g.Expect(os.WriteFile(file, out, 0o600)).To(Succeed())
	applied, err := kubectl(t, "apply", "-f", file)
	g.Expect(err).NotTo(HaveOccurred(), "kubectl apply: %s", applied)
	g.Expect(applied).NotTo(ContainSubstring("PodSecurity"), "the chart's pods meet the restricted standard")

	r := &release{name: name, namespace: ns, m: m, deploy: &appsv1.Deployment{}}
	deploys := m.OfKind("Deployment")
	g.Expect(deploys).To(HaveLen(1))
	charttest.Into(t, deploys[0], r.deploy)
	want := int(ptr.Deref(r.deploy.Spec.Replicas, 1))
	g.Eventually(func() int {
		var pods corev1.PodList
		g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels(r.deploy.Spec.Selector.MatchLabels))).To(Succeed())
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running
	}).WithTimeout(60*time.Second).Should(Equal(want), "the chart's pods admitted (restricted) and running")
	return r
}

// kubectl runs kubectl from the plane's binaries as the admin and returns
// its combined output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(plane.BinDir(), "kubectl"), append([]string{"--kubeconfig", plane.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

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

// app creates a ConfigMap and a one-replica Deployment, both named name,
// annotated reloader.stakater.com/auto and reading the ConfigMap with
// envFrom, whose pods meet the restricted standard.
func app(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(t.Context(), nt.ConfigMap(ns, name, map[string]string{"GREETING": "hello"}))).To(Succeed())
	g.Expect(k8s.Create(t.Context(), nt.Deployment(ns, name, 1, auto, nt.EnvFrom("ConfigMap", name), restricted))).To(Succeed())
}

// restricted makes a pod template meet the restricted Pod Security Standard.
func restricted(tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range tmpl.Spec.Containers {
		tmpl.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

// baselined waits until nudge has recorded the Deployment's applied state.
func baselined(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() string {
		var d appsv1.Deployment
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		return d.Annotations[controller.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of %s/%s", ns, name)
}

// changeConfigMap changes the data of the ConfigMap ns/name.
func changeConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	var cm corev1.ConfigMap
	g := NewWithT(t)
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	cm.Data["GREETING"] = "bonjour"
	g.Expect(k8s.Update(t.Context(), &cm)).To(Succeed())
}

// replicaSets returns a func counting the ReplicaSets of the Deployment
// ns/name.
func replicaSets(t *testing.T, ns, name string) func() int {
	return func() int {
		var list appsv1.ReplicaSetList
		if err := k8s.List(context.WithoutCancel(t.Context()), &list, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
			t.Errorf("Listing ReplicaSets: %v", err)
		}
		return len(list.Items)
	}
}

// installRolloutCRD installs Argo Rollouts' CRD and waits until it is
// established. The CRD is the plane's, shared by every test: it is removed
// when t ends, so that a test that wants it installed after nudge starts
// finds it absent (they also remove it first: see removeRolloutCRD).
func installRolloutCRD(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { removeRolloutCRD(t) })
	nt.InstallCRD(t, k8s, nt.RolloutCRD(t))
}

// removeRolloutCRD deletes Argo Rollouts' CRD, with every Rollout, and waits
// until API discovery no longer serves argoproj.io/v1alpha1: nudge started
// then must find Argo Rollouts not installed.
func removeRolloutCRD(t *testing.T) {
	t.Helper()
	// Not t.Context(): also run from a cleanup, when it is done.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := client.IgnoreNotFound(k8s.Delete(ctx, nt.RolloutCRD(t))); err != nil {
		t.Fatalf("Deleting the Rollout CRD: %v", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(plane.Config())
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "rollouts.argoproj.io"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		_, err := dc.ServerResourcesForGroupVersion(workload.RolloutGVK.GroupVersion().String())
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("The Rollout CRD still served 60 s after its deletion: %v", err)
	}
}

// rolloutBaselined waits until nudge has recorded the Rollout's applied
// state.
func rolloutBaselined(t *testing.T, rollout *unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(rollout), rollout)).To(Succeed())
		return rollout.GetAnnotations()[controller.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of the Rollout %s/%s", rollout.GetNamespace(), rollout.GetName())
}

// rolloutRolled waits until nudge has rolled the Rollout's template once.
func rolloutRolled(t *testing.T, rollout *unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() int64 {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(rollout), rollout)).To(Succeed())
		return rollout.GetGeneration()
	}).WithTimeout(30*time.Second).Should(Equal(int64(2)), "the Rollout %s/%s's template rolled", rollout.GetNamespace(), rollout.GetName())
}

// argoRollout returns an Argo Rollout annotated reloader.stakater.com/auto
// that reads the ConfigMap "web" with envFrom.
func argoRollout(ns, name string) *unstructured.Unstructured {
	return nt.Rollout(ns, name, auto, nt.EnvFrom("ConfigMap", "web"), restricted)
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
