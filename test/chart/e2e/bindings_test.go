package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/test/chart/charttest"
)

// harborCRD is the tests' Harbor CRD (goharbor.io/v1beta1), written from
// harbor-operator's published API (see the file), relative to the root.
const harborCRD = "internal/binding/testdata/harbor-crd.yaml"

// harborTargets are the chart values that turn value bindings on for Harbor.
var harborTargets = map[string]any{"enabled": true, "targets": []map[string]any{
	{"apiGroup": "goharbor.io", "kind": "Harbor", "resource": "harbors"},
}}

// Value bindings in a namespaced install, with Secrets ignored as workload
// sources: with the chart's Role alone (no ClusterRole of any kind), nudge
// keeps a Harbor's S3 access key equal to a Secret's key, follows its
// rotation, and is never refused a request; every request it makes stays in
// its namespace.
func TestValueBindingsNamespacedInstall(t *testing.T) {
	installBindingCRDs(t)
	ns := namespace(t, "chart-vb-")
	rel := install(t, "nudge", ns, charttest.Values{
		// Secrets ignored as workload sources: the bindings still read them.
		"reloader":      map[string]any{"watchGlobally": false, "ignoreSecrets": true},
		"valueBindings": harborTargets,
	})
	NewWithT(t).Expect(rel.m.OfKind("ClusterRole")).To(BeEmpty())
	bindAndRotate(t, rel, ns, ns)
}

// Value bindings in a global install limited to one namespace: the workload
// ClusterRole bound there alone suffices, and nudge makes no request
// elsewhere but in its own namespace.
func TestValueBindingsGlobalInstallInOneNamespace(t *testing.T) {
	installBindingCRDs(t)
	ns, watched := namespace(t, "chart-vbg-"), namespace(t, "chart-vbg-app-")
	rel := install(t, "nudge-vbg", ns, charttest.Values{
		"reloader":      map[string]any{"namespaces": watched},
		"valueBindings": harborTargets,
	})
	bindAndRotate(t, rel, ns, watched)
}

func installBindingCRDs(t *testing.T) {
	t.Helper()
	for _, file := range []string{filepath.Join("charts", "nudge", "crds", "nudge.dev_valuebindings.yaml"), harborCRD} {
		nt.InstallCRD(t, k8s, readCRD(t, file))
	}
}

// bindAndRotate runs nudge as release rel (installed in ns) would, binds
// a Secret's key into a Harbor in namespace app, rotates the Secret, and
// checks nudge's requests: none refused, none outside ns and app, no Secret
// got but the bound one and nudge's key, and the value in no log line.
func bindAndRotate(t *testing.T, rel *release, ns, app string) {
	t.Helper()
	g := NewWithT(t)
	n := start(t, rel)
	g.Expect(n.args).To(ContainElements("--value-bindings", "--value-binding-targets=Harbor.goharbor.io"))

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "s3-credentials"},
		Data: map[string][]byte{"accesskey": []byte("AKIAFIRST"), "secretkey": []byte("first-secret")}}
	g.Expect(k8s.Create(t.Context(), secret)).To(Succeed())
	harbor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
		"metadata": map[string]any{"namespace": app, "name": "harbor"},
		"spec": map[string]any{"externalURL": "https://registry.example", "harborAdminPasswordRef": "admin",
			"imageChartStorage": map[string]any{"s3": map[string]any{"bucket": "registry", "secretkeyRef": "s3-credentials"}}},
	}}
	g.Expect(k8s.Create(t.Context(), harbor)).To(Succeed())
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nudge.dev/v1alpha1", "kind": "ValueBinding",
		"metadata": map[string]any{"namespace": app, "name": "harbor-s3"},
		"spec": map[string]any{
			"target": map[string]any{"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor", "name": "harbor"},
			"values": []any{map[string]any{"fieldPath": "spec.imageChartStorage.s3.accesskey",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s3-credentials", "key": "accesskey"}}}},
		},
	}}
	g.Expect(k8s.Create(t.Context(), binding)).To(Succeed())
	accessKey := func() string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(harbor), harbor)).To(Succeed())
		v, _, _ := unstructured.NestedString(harbor.Object, "spec", "imageChartStorage", "s3", "accesskey")
		return v
	}
	g.Eventually(accessKey).WithTimeout(30*time.Second).Should(Equal("AKIAFIRST"), "the access key bound into the Harbor")

	patch := []byte(`{"data":{"accesskey":"` + base64.StdEncoding.EncodeToString([]byte("AKIAROTATED")) + `"}}`)
	g.Expect(k8s.Patch(t.Context(), secret, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	g.Eventually(accessKey).WithTimeout(30*time.Second).Should(Equal("AKIAROTATED"), "the rotated access key follows")

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		if e.Resource != "" { // not discovery
			g.Expect(e.Namespace).To(BeElementOf(ns, app), "only requests in %s and %s, got %+v", ns, app, e)
		}
		if e.Resource == "secrets" && e.Verb == "get" && e.Name != "nudge-fingerprint-key" {
			g.Expect(e).To(And(HaveField("Namespace", app), HaveField("Name", "s3-credentials")),
				"no Secret got but the bound one and the key")
		}
	}
	g.Expect(n.logs()).NotTo(ContainSubstring("AKIAROTATED"), "the value is never logged")
}

// readCRD reads the CRD at path, relative to the repository's root.
func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(charttest.Root(t), path))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return crd
}
