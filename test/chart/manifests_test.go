package chart

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/chart/charttest"
)

// TestConfigIsTheChartRendered fails when config/ is not what `make
// manifests` renders from the chart now: run `make manifests`.
func TestConfigIsTheChartRendered(t *testing.T) {
	root := charttest.Root(t)
	fresh := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "chart", "manifests.sh"), charttest.Helm(t), fresh)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/chart/manifests.sh: %v\n%s", err, out)
	}
	want, got := files(t, fresh), files(t, filepath.Join(root, "config"))
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("config/%s is missing: run `make manifests`", name)
		case !bytes.Equal(g, w):
			t.Errorf("config/%s differs from the chart rendered: run `make manifests`", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("config/%s is not rendered from the chart: remove it, or render it in hack/chart/manifests.sh", name)
		}
	}
}

// TestConfigBuildsWithKustomize builds config/ and an overlay of
// config/namespaced that moves it to another namespace, as a platform team
// would, with kubectl's kustomize.
func TestConfigBuildsWithKustomize(t *testing.T) {
	g := NewWithT(t)
	root := charttest.Root(t)
	kubectl := charttest.Bin(t, "kubectl")

	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config")).Output()
	g.Expect(err).NotTo(HaveOccurred())
	m, err := charttest.Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Get("Namespace", "nudge-system")).NotTo(BeNil())
	g.Expect(m.Get("Deployment", "nudge")).NotTo(BeNil())
	g.Expect(m.OfKind("ClusterRole")).NotTo(BeEmpty())

	out, err = exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "value-bindings")).Output()
	g.Expect(err).NotTo(HaveOccurred())
	m, err = charttest.Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Get("CustomResourceDefinition", "valuebindings.nudge.dev")).NotTo(BeNil(), "the ValueBinding CRD")
	g.Expect(m.OfKind("ValidatingAdmissionPolicy")).To(HaveLen(1), "value bindings never without their admission policy")
	g.Expect(m.OfKind("ValidatingAdmissionPolicyBinding")).To(HaveLen(1))
	g.Expect(m.Get("Deployment", "nudge")).NotTo(BeNil())

	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(root, "config", "namespaced"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"),
		[]byte("namespace: openstack-system\nresources:\n- "+base+"\n"), 0o600)).To(Succeed())
	out, err = exec.Command(kubectl, "kustomize", overlay).Output()
	g.Expect(err).NotTo(HaveOccurred())
	m, err = charttest.Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Kinds()).To(ConsistOf("ServiceAccount", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment", "Secret"))
	for _, o := range m {
		g.Expect(o.GetNamespace()).To(Equal("openstack-system"), "%s %s", o.GetKind(), o.GetName())
		if subjects, ok := o.Object["subjects"].([]any); ok {
			g.Expect(subjects).To(HaveEach(HaveKeyWithValue("namespace", "openstack-system")), "%s %s", o.GetKind(), o.GetName())
		}
	}
}

// files returns the content of every file under dir by its slash path.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
