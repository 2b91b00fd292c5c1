package trim

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/fingerprint"
)

// TestTrimPodStatus: a cached SecretProviderClassPodStatus keeps what
// csi.PodStatusOf reads, and its name, namespace and resourceVersion.
func TestTrimPodStatus(t *testing.T) {
	g := NewWithT(t)
	// As the driver writes it.
	u := csi.NewPodStatus()
	u.SetNamespace("shop")
	u.SetName("web-1-shop-vault-db")
	u.SetResourceVersion("7")
	u.SetLabels(map[string]string{"internal.secrets-store.csi.k8s.io/node-name": "node-1"})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "u"}})
	u.Object["status"] = map[string]any{"podName": "web-1", "secretProviderClassName": "vault-db", "mounted": true,
		"targetPath": "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount", "objects": []any{
			map[string]any{"id": "db/password", "version": "1"}, map[string]any{"id": "db/user", "version": "7"}}}

	_, err := PodStatus(u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object).To(Equal(map[string]any{
		"apiVersion": "secrets-store.csi.x-k8s.io/v1", "kind": "SecretProviderClassPodStatus",
		"metadata": map[string]any{"name": "web-1-shop-vault-db", "namespace": "shop", "resourceVersion": "7"},
		"status": map[string]any{"secretProviderClassName": "vault-db", "mounted": true, "objects": []any{
			map[string]any{"id": "db/password", "version": "1"}, map[string]any{"id": "db/user", "version": "7"}}},
	}), "of the status only the class, mounted and the objects' ids and versions")
	s, ok := csi.PodStatusOf(u)
	g.Expect(ok).To(BeTrue())
	g.Expect(s).To(Equal(csi.PodStatus{Class: "vault-db", Mounted: true,
		Objects: []fingerprint.ObjectVersion{{ID: "db/password", Version: "1"}, {ID: "db/user", Version: "7"}}}))
	again := u.DeepCopy()
	_, _ = PodStatus(again)
	g.Expect(again).To(Equal(u), "idempotent")
}
