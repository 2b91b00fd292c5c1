package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/test/chart/charttest"
)

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
	return installFiles(t, name, ns, nil, values)
}

// installFiles is install with the values files at paths files, values over
// them.
func installFiles(t *testing.T, name, ns string, files []string, values charttest.Values) *release {
	t.Helper()
	g := NewWithT(t)
	m, out, err := charttest.TryRenderFiles(t, name, ns, files, values)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	file := filepath.Join(t.TempDir(), "chart.yaml")
	g.Expect(os.WriteFile(file, out, 0o600)).To(Succeed())
	applied, err := kubectl(t, "apply", "-f", file)
	g.Expect(err).NotTo(HaveOccurred(), "kubectl apply: %s", applied)
	g.Expect(applied).NotTo(ContainSubstring("PodSecurity"), "the chart's pods meet the restricted standard")

	return installed(t, name, ns, m)
}

// installed returns the release of the chart's objects m installed as name
// in ns, once the chart's (fake) pods run.
func installed(t *testing.T, name, ns string, m charttest.Manifest) *release {
	t.Helper()
	g := NewWithT(t)
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
