package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// These tests install the chart with `helm install`, the helm CLI that
// `make helm` builds from Helm's Go SDK (hack/helm): unlike the tests that
// render and apply, Helm installs the chart's crds/, evaluates a parent
// chart's dependency conditions and owns what it creates. The CLI rather
// than the SDK in the test: the SDK would add Helm's dependency tree to
// nudge's go.mod.

// valueBindingsCRD is the name of the CRD in the chart's crds/.
const valueBindingsCRD = "valuebindings.nudge.dev"

// The chart as a dependency of a parent chart, switched by a condition, as
// the OpenStack Magnum spec adds Reloader to capi-helm-charts: with
// <key>.enabled=false Helm installs nothing of it, with true everything,
// the CRD of its crds/ included. By its name (nudge.enabled), and aliased
// as Reloader's chart was named (reloader.enabled).
func TestHelmInstallAsDependency(t *testing.T) {
	for _, key := range []string{"nudge", "reloader"} {
		t.Run(key+".enabled", func(t *testing.T) {
			g := NewWithT(t)
			removeCRD(t, valueBindingsCRD) // whatever test ran before: Helm must create it
			parent := t.TempDir()
			writeFile(t, filepath.Join(parent, "Chart.yaml"), `apiVersion: v2
name: cluster-addons
version: 0.1.0
dependencies:
- name: nudge
  alias: `+key+`
  version: ">=0.0.0-0"
  repository: file://`+charttest.Chart(t)+`
  condition: `+key+`.enabled
`)
			writeFile(t, filepath.Join(parent, "values.yaml"), key+`:
  enabled: false
  reloader:
    watchGlobally: false
`)
			out, err := helm(t, "dependency", "build", parent)
			g.Expect(err).NotTo(HaveOccurred(), "helm dependency build: %s", out)

			off := namespace(t, "chart-dep-off-")
			out, err = helm(t, "install", "addons", parent, "--namespace", off)
			g.Expect(err).NotTo(HaveOccurred(), "helm install with %s.enabled=false: %s", key, out)
			g.Expect(releaseManifest(t, "addons", off)).To(BeEmpty(), "nothing of nudge's chart installed")
			var deploys appsv1.DeploymentList
			g.Expect(k8s.List(t.Context(), &deploys, client.InNamespace(off))).To(Succeed())
			g.Expect(deploys.Items).To(BeEmpty())
			err = k8s.Get(t.Context(), client.ObjectKey{Name: valueBindingsCRD}, &apiextensionsv1.CustomResourceDefinition{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no CRD installed: %v", err)

			on := namespace(t, "chart-dep-on-")
			out, err = helm(t, "install", "addons", parent, "--namespace", on, "--set", key+".enabled=true")
			g.Expect(err).NotTo(HaveOccurred(), "helm install with %s.enabled=true: %s", key, out)
			m := releaseManifest(t, "addons", on)
			g.Expect(m.Kinds()).To(ContainElements("ServiceAccount", "Role", "RoleBinding", "Deployment"))
			g.Expect(m.Kinds()).NotTo(ContainElements("ClusterRole", "ClusterRoleBinding"), "the parent's reloader.watchGlobally=false")
			g.Expect(k8s.Get(t.Context(), client.ObjectKey{Name: valueBindingsCRD}, &apiextensionsv1.CustomResourceDefinition{})).
				To(Succeed(), "Helm installed the CRD of the chart's crds/")
			installed(t, "addons", on, m)
		})
	}
}

// The OpenStack Magnum spec's install, with Helm: one release per namespace
// (openstack-system's, and a second to show they stay apart), each with
// reloader.watchGlobally=false and --skip-crds (no value bindings: no CRD,
// and no cluster-wide permission needed to install), with namespaced RBAC
// only. Cinder CSI's DaemonSet, annotated with Reloader's named-resource
// annotation for the cloud-config Secret, rolls exactly once when the
// Secret is rotated.
func TestHelmInstallMagnum(t *testing.T) {
	g := NewWithT(t)
	const ds, secret = "openstack-cinder-csi-nodeplugin", "cloud-config"
	watcher, err := nt.Client(plane.Config())
	g.Expect(err).NotTo(HaveOccurred())

	namespaces := []string{namespace(t, "openstack-system-"), namespace(t, "openstack-other-")}
	templates := map[string]*nt.TemplateWrites{}
	users := map[string]string{}
	for _, ns := range namespaces {
		out, err := helm(t, "install", "nudge", charttest.Chart(t), "--namespace", ns, "--skip-crds",
			"--set", "reloader.watchGlobally=false")
		g.Expect(err).NotTo(HaveOccurred(), "helm install in %s: %s", ns, out)
		m := releaseManifest(t, "nudge", ns)
		g.Expect(m.Kinds()).NotTo(ContainElements("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"), "namespaced objects only")
		noClusterObjects(t, ns)
		rel := installed(t, "nudge", ns, m)
		n := start(t, rel)
		users[ns] = rel.user()
		t.Cleanup(func() { n.stop(t); n.expectNoForbidden(t) })

		templates[ns] = nt.WatchTemplatesOf(t, watcher, ns, &appsv1.DaemonSetList{})
		g.Expect(k8s.Create(t.Context(), nt.Secret(ns, secret, map[string]string{"clouds.yaml": "credential: one"}))).To(Succeed())
		g.Expect(k8s.Create(t.Context(), nt.DaemonSet(ns, ds, map[string]string{"secret.reloader.stakater.com/reload": secret},
			nt.Volume("Secret", secret), restricted))).To(Succeed())
	}
	for _, ns := range namespaces {
		daemonSetBaselined(t, ns, ds)
	}

	for i, ns := range namespaces {
		rotateSecret(t, ns, secret, "credential: two")
		g.Eventually(templates[ns].Count).WithArguments(ds).WithTimeout(30*time.Second).Should(BeEquivalentTo(1),
			"one rollout of %s/%s", ns, ds)
		g.Eventually(controllerRevisions(t, ns)).WithTimeout(30*time.Second).Should(Equal(2),
			"the DaemonSet's second revision in %s", ns)
		for _, other := range namespaces[i+1:] {
			g.Expect(templates[other].Count(ds)).To(BeZero(), "no rollout in %s, whose Secret did not change", other)
		}
	}
	g.Consistently(func() []int64 {
		return []int64{templates[namespaces[0]].Count(ds), templates[namespaces[1]].Count(ds)}
	}).WithTimeout(5*time.Second).Should(Equal([]int64{1, 1}), "exactly one rollout of each DaemonSet")

	for _, ns := range namespaces {
		for _, e := range requestsOf(t, users[ns]) {
			if e.Resource != "" { // not discovery
				g.Expect(e.Namespace).To(Equal(ns), "only requests in %s, got %+v", ns, e)
			}
		}
	}
}

// helm runs the helm CLI (charttest.Helm) as the plane's admin, with
// Helm's own configuration, cache and data in a directory of t's, and
// returns its combined output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), charttest.Helm(t), append(args, "--kubeconfig", plane.Kubeconfig())...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// releaseManifest returns the objects Helm installed as release in ns
// (`helm get manifest`), failing t when helm fails.
func releaseManifest(t *testing.T, release, ns string) charttest.Manifest {
	t.Helper()
	out, err := helm(t, "get", "manifest", release, "--namespace", ns)
	if err != nil {
		t.Fatalf("helm get manifest %s -n %s: %v\n%s", release, ns, err, out)
	}
	m, err := charttest.Parse([]byte(out))
	if err != nil {
		t.Fatalf("Parsing the manifest of %s: %v\n%s", release, err, out)
	}
	return m
}

// noClusterObjects fails t when a ClusterRole or ClusterRoleBinding
// belongs to a Helm release of ns.
func noClusterObjects(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	const owner = "meta.helm.sh/release-namespace"
	var roles rbacv1.ClusterRoleList
	g.Expect(k8s.List(t.Context(), &roles)).To(Succeed())
	for _, r := range roles.Items {
		g.Expect(r.Annotations[owner]).NotTo(Equal(ns), "ClusterRole %s of a release in %s", r.Name, ns)
	}
	var bindings rbacv1.ClusterRoleBindingList
	g.Expect(k8s.List(t.Context(), &bindings)).To(Succeed())
	for _, b := range bindings.Items {
		g.Expect(b.Annotations[owner]).NotTo(Equal(ns), "ClusterRoleBinding %s of a release in %s", b.Name, ns)
	}
}

// daemonSetBaselined waits until nudge has recorded the DaemonSet's applied
// state.
func daemonSetBaselined(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() string {
		var d appsv1.DaemonSet
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		return d.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of DaemonSet %s/%s", ns, name)
}

// rotateSecret sets the Secret's one key clouds.yaml to value.
func rotateSecret(t *testing.T, ns, name, value string) {
	t.Helper()
	g := NewWithT(t)
	var s corev1.Secret
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s)).To(Succeed())
	s.Data = map[string][]byte{"clouds.yaml": []byte(value)}
	g.Expect(k8s.Update(t.Context(), &s)).To(Succeed())
}

// controllerRevisions returns a func counting the ControllerRevisions of
// ns: a DaemonSet's revisions, one for each pod template it rolled out.
func controllerRevisions(t *testing.T, ns string) func() int {
	return func() int {
		var revs appsv1.ControllerRevisionList
		if err := k8s.List(t.Context(), &revs, client.InNamespace(ns)); err != nil {
			t.Fatalf("Listing ControllerRevisions: %v", err)
		}
		return len(revs.Items)
	}
}

// removeCRD deletes the CRD name, and waits until it is gone.
func removeCRD(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := client.IgnoreNotFound(k8s.Delete(ctx, crd)); err != nil {
		t.Fatalf("Deleting CRD %s: %v", name, err)
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, crd)), nil
	})
	if err != nil {
		t.Fatalf("CRD %s still there 60 s after its deletion: %v", name, err)
	}
}

// writeFile writes content to path, failing t.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.TrimLeft(content, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}
