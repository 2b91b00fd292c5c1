package flux

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// The Flux modules whose CRDs the test installs: kustomize-controller, the
// version hack/kube/go.mod pins, and source-controller, the version of the
// source API kustomize-controller v1.9.6 requires.
const (
	kustomizeController = "github.com/fluxcd/kustomize-controller@v1.9.6"
	sourceController    = "github.com/fluxcd/source-controller@v1.9.0"
)

var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Kustomization"}
)

// gitSource stands where source-controller does: it serves each revision
// of the Git content as the tarball source-controller would (a .tar.gz of
// the repository's files) on 127.0.0.1, and writes the GitRepository's
// status.artifact as source-controller does once it fetched a revision.
// kustomize-controller reads no more of a source than that.
type gitSource struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	repo  client.ObjectKey
}

// newGitSource creates the GitRepository namespace/name, with no artifact
// yet, and serves its artifacts until t ends.
func newGitSource(t *testing.T, namespace, name string) *gitSource {
	t.Helper()
	s := &gitSource{t: t, files: map[string][]byte{}, repo: client.ObjectKey{Namespace: namespace, Name: name}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.srv.Close)
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryGVK)
	repo.SetNamespace(namespace)
	repo.SetName(name)
	_ = unstructured.SetNestedMap(repo.Object, map[string]any{
		"url": "http://127.0.0.1:1/apps.git", "interval": "10m", "ref": map[string]any{"branch": "main"},
	}, "spec")
	if err := suite.K8s.Create(t.Context(), repo); err != nil {
		t.Fatalf("creating GitRepository %s: %v", s.repo, err)
	}
	return s
}

// push makes content, the file deploy.yaml of the repository, its new
// revision, and returns that revision as source-controller writes it
// ("main@sha1:<commit>").
func (s *gitSource) push(content string) string {
	s.t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "deploy.yaml", Mode: 0o644, Size: int64(len(content))}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		s.t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		s.t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		s.t.Fatal(err)
	}
	commit := sha1.Sum([]byte(content))
	revision := "main@sha1:" + hex.EncodeToString(commit[:])
	digest := sha256.Sum256(buf.Bytes())
	path := "/gitrepository/" + s.repo.Namespace + "/" + s.repo.Name + "/" + hex.EncodeToString(commit[:]) + ".tar.gz"
	s.mu.Lock()
	s.files[path] = buf.Bytes()
	s.mu.Unlock()

	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryGVK)
	if err := suite.K8s.Get(s.t.Context(), s.repo, repo); err != nil {
		s.t.Fatalf("reading GitRepository %s: %v", s.repo, err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	_ = unstructured.SetNestedField(repo.Object, map[string]any{
		"observedGeneration": repo.GetGeneration(),
		"artifact": map[string]any{
			"path": strings.TrimPrefix(path, "/"), "url": s.srv.URL + path, "revision": revision,
			"digest": "sha256:" + hex.EncodeToString(digest[:]), "lastUpdateTime": now, "size": int64(buf.Len()),
		},
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "Succeeded", "message": "stored artifact for revision '" + revision + "'",
			"lastTransitionTime": now, "observedGeneration": repo.GetGeneration(),
		}},
	}, "status")
	if err := suite.K8s.Status().Update(s.t.Context(), repo); err != nil {
		s.t.Fatalf("writing the artifact of GitRepository %s: %v", s.repo, err)
	}
	return revision
}

// startKustomizeController runs kustomize-controller, built by
// hack/flux.sh, against the plane, watching namespace alone, as Flux's
// manifests run it but for leader election, metrics and probes (off).
func startKustomizeController(t *testing.T, namespace string) {
	t.Helper()
	bin := charttest.Built(t, "kustomize-controller", "hack/flux.sh")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := nt.WriteKubeconfig(kubeconfig, suite.Plane.Config(), namespace); err != nil {
		t.Fatal(err)
	}
	nt.StartProcess(t, bin, []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + namespace},
		"--watch-all-namespaces=false", "--enable-leader-election=false", "--metrics-addr=0", "--health-addr=0",
		"--no-remote-bases=true", "--log-level=debug", "--log-encoding=json")
}

// installFluxCRDs installs the Kustomization CRD and the source CRDs
// kustomize-controller watches, from their Go modules.
func installFluxCRDs(t *testing.T) {
	t.Helper()
	nt.InstallCRD(t, suite.K8s, nt.ModuleCRD(t, kustomizeController, "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"))
	for _, kind := range []string{"gitrepositories", "ocirepositories", "buckets"} {
		nt.InstallCRD(t, suite.K8s, nt.ModuleCRD(t, sourceController, "config/crd/bases/source.toolkit.fluxcd.io_"+kind+".yaml"))
	}
}

// TestFluxKustomizeControllerLeavesNudgesState is
// TestFluxApplyLeavesNudgesState with Flux's kustomize-controller itself
// applying each revision of the Git content from a GitRepository
// (Kustomization with spec.force and prune), and a reconcile requested
// (as `flux reconcile kustomization` does) for the same revision.
func TestFluxKustomizeControllerLeavesNudgesState(t *testing.T) {
	installFluxCRDs(t)
	e := suite.Setup(t, true, func(o *options.Options) { o.RolloutWindow = options.Default().RolloutWindow })
	g, ctx := e.G, e.Ctx
	git := newGitSource(t, e.NS, "apps")
	const image1, image2 = "registry.example/app:1", "registry.example/app:2"
	revision := git.push(manifests(e.NS, "1", image1))

	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	ks.SetNamespace(e.NS)
	ks.SetName("apps")
	_ = unstructured.SetNestedMap(ks.Object, map[string]any{
		"interval": "10m", "path": "./", "prune": true, "force": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"},
	}, "spec")
	g.Expect(suite.K8s.Create(ctx, ks)).To(Succeed())
	startKustomizeController(t, e.NS)
	applied := func(revision, requested string) {
		t.Helper()
		g.Eventually(func() []string {
			g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
			rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
			handled, _, _ := unstructured.NestedString(ks.Object, "status", "lastHandledReconcileAt")
			return []string{rev, handled}
		}).WithTimeout(60*time.Second).Should(Equal([]string{revision, requested}),
			"kustomize-controller to apply revision %s (reconcile requested at %q)", revision, requested)
	}
	applied(revision, "")
	e.Baselined("web")
	g.Expect(e.Rollouts("web")()).To(BeZero(), "no rollout at first sight")

	revision = git.push(manifests(e.NS, "2", image1))
	applied(revision, "")
	e.RolledTo("web", 1)
	rolled := nudgeKeys(e.Deployment("web"))
	g.Expect(rolled[workload.RestartedAtAnnotation]).NotTo(BeEmpty(), "nudge's trigger")

	// The same revision again, as each interval's reconcile applies it.
	before := e.Deployment("web")
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	g.Expect(suite.K8s.Patch(ctx, ks, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"`+requested+`"}}}`)))).To(Succeed())
	applied(revision, requested)
	e.RolledTo("web", 1)
	after := e.Deployment("web")
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "kustomize-controller found no drift and wrote nothing")
	g.Expect(nudgeKeys(after)).To(Equal(rolled), "nudge's keys as nudge wrote them")
	g.Expect(owners(after, "f:metadata", "f:annotations", "f:"+workload.AppliedAnnotation)).To(Equal([]string{workload.FieldManager + "/Update"}))
	g.Expect(owners(after, "f:spec", "f:template", "f:spec", "f:containers")).To(ContainElement(fieldManager+"/Apply"), "the containers owned by kustomize-controller")
	flux := newKustomization(suite.K8s, e.NS, "apps", true)
	g.Expect(flux.drift(ctx, t, manifests(e.NS, "2", image1))).To(BeEmpty(), "ssa's drift check finds no drift")

	revision = git.push(manifests(e.NS, "2", image2))
	applied(revision, requested)
	e.RolledTo("web", 2)
	d := e.Deployment("web")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image2))
	g.Expect(nudgeKeys(d)).To(Equal(rolled), "nudge's keys and trigger kept through Flux's rollout")
	g.Expect(e.Events("web", record.ReasonStateRestored)()).To(BeEmpty(), "no StateRestored Warning")

	revision = git.push(manifests(e.NS, "3", image2))
	applied(revision, requested)
	e.RolledTo("web", 3)
	g.Eventually(func() int { return len(e.Events("web", record.ReasonRolled)()) }).WithTimeout(20*time.Second).
		Should(Equal(2), "nudge's two Rolled Events, none for Flux's rollout")
}
