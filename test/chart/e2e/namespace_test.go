package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/test/chart/charttest"
)

// Reloader's top-level namespace: a release rendered for one namespace
// places every namespaced object in the one the value names, where the API
// server takes them and nudge's pods run; nudge, run there with the chart's
// RBAC, rolls a Deployment of another namespace without a forbidden
// request. Reloader's reloader.serviceAccount.automountServiceAccountToken
// false is taken too: the ServiceAccount mounts no token, nudge's pod its
// own.
func TestNamespaceValueInstall(t *testing.T) {
	g := NewWithT(t)
	releaseNS, home, apps := namespace(t, "chart-release-"), namespace(t, "chart-home-"), namespace(t, "chart-home-apps-")
	m, out, err := charttest.TryRenderFiles(t, "nudge-moved", releaseNS, nil, charttest.Values{"namespace": home,
		"reloader": map[string]any{"serviceAccount": map[string]any{"automountServiceAccountToken": false}}})
	g.Expect(err).NotTo(HaveOccurred(), "helm template: %s", out)
	file := filepath.Join(t.TempDir(), "chart.yaml")
	g.Expect(os.WriteFile(file, out, 0o600)).To(Succeed())
	applied, err := kubectl(t, "apply", "-f", file)
	g.Expect(err).NotTo(HaveOccurred(), "kubectl apply: %s", applied)
	rel := installed(t, "nudge-moved", home, m)

	var sa corev1.ServiceAccount
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: home, Name: rel.deploy.Spec.Template.Spec.ServiceAccountName}, &sa)).To(Succeed())
	g.Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	var pods corev1.PodList
	g.Expect(k8s.List(t.Context(), &pods, client.InNamespace(home), client.MatchingLabels(rel.deploy.Spec.Selector.MatchLabels))).To(Succeed())
	g.Expect(pods.Items).To(HaveEach(HaveField("Spec.AutomountServiceAccountToken", HaveValue(BeTrue()))), "nudge's pod mounts its token")
	var none corev1.ServiceAccountList
	g.Expect(k8s.List(t.Context(), &none, client.InNamespace(releaseNS))).To(Succeed())
	for _, a := range none.Items {
		g.Expect(a.Name).To(Equal("default"), "nothing of the chart's in the release namespace")
	}

	n := start(t, rel)
	app(t, apps, "web")
	baselined(t, apps, "web")
	changeConfigMap(t, apps, "web")
	g.Eventually(replicaSets(t, apps, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet")
	n.stop(t)
	n.expectNoForbidden(t)
}
