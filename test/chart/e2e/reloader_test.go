package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/test/chart/charttest"
)

// prometheusOperator is the Go module whose CRDs (ServiceMonitor,
// PodMonitor) the tests install, taken from the module proxy at test time.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// Reloader's published default values file (charttest.ReloaderValues),
// installed with `helm install` as it is, and with the OpenStack Magnum
// spec's settings (a release in the namespace it serves,
// reloader.watchGlobally=false, --skip-crds): Helm installs it, the chart's
// pods are admitted (restricted) and run, and nudge, run with the chart's
// args and ServiceAccount, has the flags docs/reference.md's table gives
// those values, rolls what they put in its scope, and is never refused a
// request.
func TestReloaderValuesInstall(t *testing.T) {
	file := charttest.ReloaderValues(t)
	t.Run("as published", func(t *testing.T) {
		g := NewWithT(t)
		ns, apps := namespace(t, "chart-reloader-"), namespace(t, "chart-reloader-apps-")
		// Named after its namespace: its ClusterRoles are named after it,
		// and a second run (-count) installs again.
		rel := helmInstall(t, ns, ns, "--values", file)
		g.Expect(rel.m.Kinds()).To(ContainElements("ClusterRole", "ClusterRoleBinding"), "watchGlobally: true")
		g.Expect(rel.deploy.Spec.Template.Spec.Containers[0].Image).To(HavePrefix("ghcr.io/nudge-dev/nudge:"), "nudge's image, not Reloader's")
		n := start(t, rel)
		g.Expect(n.args).To(ContainElements("--ignored-workload-types=rollouts", "--log-level=info"), "isArgoRollouts: false, logLevel: info")
		g.Expect(n.args).NotTo(ContainElement(HavePrefix("--namespaces")), "watchGlobally: true")

		app(t, apps, "web")
		baselined(t, apps, "web")
		changeConfigMap(t, apps, "web")
		g.Eventually(replicaSets(t, apps, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", apps)

		n.stop(t)
		n.expectNoForbidden(t)
		requestsOf(t, rel.user())
	})
	t.Run("Magnum", func(t *testing.T) {
		g := NewWithT(t)
		const ds, secret = "openstack-cinder-csi-nodeplugin", "cloud-config"
		ns := namespace(t, "openstack-system-")
		rel := helmInstall(t, "nudge", ns, "--values", file, "--skip-crds", "--set", "reloader.watchGlobally=false")
		g.Expect(rel.m.Kinds()).NotTo(ContainElements("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"), "namespaced objects only")
		noClusterObjects(t, ns)
		n := start(t, rel)
		g.Expect(n.args).To(ContainElements("--namespaces="+ns, "--ignored-workload-types=rollouts", "--log-level=info"),
			"watchGlobally: false, isArgoRollouts: false, logLevel: info")

		watcher, err := nt.Client(plane.Config())
		g.Expect(err).NotTo(HaveOccurred())
		templates := nt.WatchTemplatesOf(t, watcher, ns, &appsv1.DaemonSetList{})
		g.Expect(k8s.Create(t.Context(), nt.Secret(ns, secret, map[string]string{"clouds.yaml": "credential: one"}))).To(Succeed())
		g.Expect(k8s.Create(t.Context(), nt.DaemonSet(ns, ds, map[string]string{"secret.reloader.stakater.com/reload": secret},
			nt.Volume("Secret", secret), restricted))).To(Succeed())
		daemonSetBaselined(t, ns, ds)
		rotateSecret(t, ns, secret, "credential: two")
		g.Eventually(controllerRevisions(t, ns)).WithTimeout(30*time.Second).Should(Equal(2), "the DaemonSet's second revision")
		g.Consistently(templates.Count).WithArguments(ds).WithTimeout(3*time.Second).Should(BeEquivalentTo(1), "one rollout of %s", ds)

		n.stop(t)
		n.expectNoForbidden(t)
		for _, e := range requestsOf(t, rel.user()) {
			if e.Resource != "" { // not discovery
				g.Expect(e.Namespace).To(Equal(ns), "only requests in %s, got %+v", ns, e)
			}
		}
	})
}

// helmInstall installs the chart with `helm install name` in ns with helm's
// further args, and returns the release once its (fake) pods run.
func helmInstall(t *testing.T, name, ns string, args ...string) *release {
	t.Helper()
	out, err := helm(t, append([]string{"install", name, charttest.Chart(t), "--namespace", ns}, args...)...)
	if err != nil {
		t.Fatalf("helm install %s -n %s: %v\n%s", name, ns, err, out)
	}
	if strings.Contains(out, "PodSecurity") {
		t.Errorf("helm install %s: the chart's pods do not meet the restricted standard:\n%s", name, out)
	}
	return installed(t, name, ns, releaseManifest(t, name, ns))
}

// A values file setting every value of Reloader's chart installs nudge's
// chart: every object is accepted by the API server (the monitors with
// prometheus-operator's CRDs), and nudge's two pods, scheduled with the
// file's node selector, affinity, tolerations, spread, priority and
// runtime class, are admitted (restricted) and run. nudge, run with the
// chart's args, reads the file's custom annotation names and selectors: it
// rolls a Deployment annotated platform.example/auto in a namespace labelled
// team=platform when its Secret labelled reload=yes changes. Two values are
// changed for the run: no webhookUrl (nudge would send requests instead of
// rolling) and pprof on 127.0.0.1.
func TestReloaderValuesEveryInstall(t *testing.T) {
	g := NewWithT(t)
	installMonitoringCRDs(t)
	priority := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "nudge-test-priority"}, Value: 1000}
	runtime := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nudge-test-runtime"}, Handler: "runc"}
	for _, o := range []client.Object{priority, runtime} {
		g.Expect(client.IgnoreAlreadyExists(k8s.Create(t.Context(), o))).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(context.WithoutCancel(t.Context()), o) })
	}
	ns, monitoring, apps := namespace(t, "chart-revery-"), namespace(t, "chart-monitoring-"), namespace(t, "chart-revery-apps-")
	moved := map[string]any{"namespace": monitoring}
	rel := installFiles(t, "nudge-every", ns, []string{charttest.Testdata(t, "reloader-every-value.yaml")},
		charttest.Values{"reloader": map[string]any{"serviceMonitor": moved, "podMonitor": moved,
			"webhookUrl": "", "pprofAddr": "127.0.0.1:0"}})

	const name = "platform-reloader"
	var pods corev1.PodList
	g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels(rel.deploy.Spec.Selector.MatchLabels))).To(Succeed())
	g.Expect(pods.Items).To(HaveEach(And(
		HaveField("Spec.NodeName", Not(BeEmpty())),
		HaveField("Spec.PriorityClassName", "nudge-test-priority"),
		HaveField("Spec.Priority", HaveValue(BeEquivalentTo(1000))),
		HaveField("Spec.RuntimeClassName", HaveValue(Equal("nudge-test-runtime"))),
		HaveField("Spec.HostUsers", HaveValue(BeFalse())),
	)), "scheduled as the file asks")
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &policyv1.PodDisruptionBudget{})).To(Succeed())
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &networkingv1.NetworkPolicy{})).To(Succeed())
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})).To(Succeed())
	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		m := &unstructured.Unstructured{}
		m.SetAPIVersion("monitoring.coreos.com/v1")
		m.SetKind(kind)
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: monitoring, Name: name}, m)).To(Succeed(), kind)
	}

	label := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apps}}
	g.Expect(k8s.Patch(t.Context(), label, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"platform"}}}`)))).To(Succeed())
	n := start(t, rel)
	g.Expect(n.args).To(ContainElements("--auto-annotation=platform.example/auto", "--leader-election-id=platform-reloader-lock"))
	secret := nt.Secret(apps, "web", map[string]string{"GREETING": "hello"})
	secret.Labels = map[string]string{"reload": "yes"}
	g.Expect(k8s.Create(t.Context(), secret)).To(Succeed())
	g.Expect(k8s.Create(t.Context(), nt.Deployment(apps, "web", 1, map[string]string{"platform.example/auto": "true"},
		nt.EnvFrom("Secret", "web"), restricted))).To(Succeed())
	baselined(t, apps, "web")
	secret.Data["GREETING"] = []byte("bonjour")
	g.Expect(k8s.Update(t.Context(), secret)).To(Succeed())
	g.Eventually(replicaSets(t, apps, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet: platform.example/auto read")

	n.stop(t)
	n.expectNoForbidden(t)
	requestsOf(t, rel.user())
}

// installMonitoringCRDs installs prometheus-operator's ServiceMonitor and
// PodMonitor CRDs from its Go module (example/prometheus-operator-crd),
// downloaded by `go mod download`. They stay installed: no test minds them.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", prometheusOperator).Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Error != "" {
		t.Fatalf("go mod download %s: %v %v %s", prometheusOperator, err, jerr, mod.Error)
	}
	for _, file := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml"} {
		b, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", file))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("Decoding %s: %v", file, err)
		}
		nt.InstallCRD(t, k8s, crd)
	}
}
