package binary

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
)

// With --enable-csi-integration and no Secrets Store CSI driver yet, nudge
// starts, waits for the driver's kind, and once its CRD is installed rolls a
// workload when the SecretProviderClass it mounts is rotated: once, and not
// at the first mount.
func TestCSIInstalledAfterStart(t *testing.T) {
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "bin-csi-")
	g.Expect(err).NotTo(HaveOccurred())
	p := start(t, []string{"POD_NAMESPACE=" + ns}, "--kubeconfig="+kubeconfig(t, ""), "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--namespaces="+ns, "--enable-csi-integration", "--discovery-interval=1s",
		"--rollout-window=0s", "--log-level=trace")
	g.Eventually(p.Output).WithTimeout(30*time.Second).Should(ContainSubstring("Kind=SecretProviderClassPodStatus"),
		"nudge waiting for SecretProviderClassPodStatus to be served")
	g.Expect(p.Output()).NotTo(ContainSubstring("Watching Secrets Store CSI"), "not served yet")

	crd := nt.PodStatusCRD(t)
	nt.InstallCRD(t, k8s, crd)
	t.Cleanup(func() { uninstallCRD(t, crd) })
	g.Eventually(p.Output).WithTimeout(30*time.Second).Should(ContainSubstring("Watching Secrets Store CSI SecretProviderClassPodStatuses"),
		"nudge watching the newly served kind")

	d := nt.Deployment(ns, "web", 1, map[string]string{"reloader.stakater.com/auto": "true"}, nt.CSIVolume("vault-db"))
	ps := nt.PodStatus(ns, "web-5d8f7-x2k9q", "vault-db", [2]string{"secret/db", "1"})
	g.Expect(k8s.Create(t.Context(), d)).To(Succeed())
	g.Expect(k8s.Create(t.Context(), ps)).To(Succeed())
	deployment := func() *appsv1.Deployment {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(d), d)).To(Succeed())
		return d
	}
	g.Eventually(func() string { return deployment().Annotations[workload.AppliedAnnotation] }).WithTimeout(30*time.Second).
		Should(ContainSubstring(" SecretProviderClass/vault-db="), "nudge counting the mounted class")
	restartedAt := func() string { return deployment().Spec.Template.Annotations[workload.RestartedAtAnnotation] }
	g.Expect(restartedAt()).To(BeEmpty(), "the first mount rolls nothing")

	g.Eventually(func() error {
		cur := ps.DeepCopy()
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(ps), cur); err != nil {
			return err
		}
		nt.SetPodStatusObjects(cur, [2]string{"secret/db", "2"})
		return k8s.Update(t.Context(), cur)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(restartedAt).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "the rotation rolled the Deployment")
	rolled := restartedAt()
	g.Consistently(restartedAt).WithTimeout(3*time.Second).Should(Equal(rolled), "once")
}

// uninstallCRD deletes crd and waits until API discovery no longer serves
// its group version, so that a next run (-count) starts without it.
func uninstallCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	g := NewWithT(t)
	g.Expect(client.IgnoreNotFound(k8s.Delete(context.Background(), crd))).To(Succeed())
	dc, err := discovery.NewDiscoveryClientForConfig(plane.Config())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool {
		_, err := dc.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + crd.Spec.Versions[0].Name)
		return apierrors.IsNotFound(err)
	}).WithTimeout(30*time.Second).Should(BeTrue(), "the API to stop serving %s", crd.Name)
}
