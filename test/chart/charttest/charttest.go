// Package charttest renders nudge's Helm chart with the helm binary that
// `make helm` builds, and reads the result back as Kubernetes objects, for
// the chart's tests.
package charttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"nudge.dev/nudge/internal/testbed"
)

// Helm returns the path of the helm binary `make helm` builds: see Bin.
func Helm(t testing.TB) string {
	t.Helper()
	return Bin(t, "helm")
}

// Bin returns the path of the binary name (helm, kubectl...) in
// $NUDGE_KUBE_BINS, or in the directory `make kube-bins` and `make helm`
// build into by default. It fails t when there is none.
func Bin(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(binDir(t), name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("No %s at %s: run `make kube-bins helm` (or set %s): %v", name, path, testbed.BinDirEnv, err)
	}
	return path
}

// Built returns the path of the binary name in the directory Bin reads,
// after running the repository's script that builds it there (a path
// relative to the repository's root, run with that directory and then args
// as its arguments, as the Makefile's target runs it): `go test -run` of one
// integration builds what it needs. The script is a no-op when a binary of
// its pinned version is there. It fails t when the build fails.
func Built(t testing.TB, name, script string, args ...string) string {
	t.Helper()
	dir := binDir(t)
	root := Root(t)
	cmd := exec.Command(filepath.Join(root, script), append([]string{dir}, args...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Building %s with %s: %v\n%s", name, script, err, out)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s built nothing at %s: %v", script, path, err)
	}
	return path
}

// binDir returns $NUDGE_KUBE_BINS, or the directory `make kube-bins`
// builds into by default.
func binDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(testbed.BinDirEnv); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("Finding the binary directory (set %s): %v", testbed.BinDirEnv, err)
	}
	return filepath.Join(cache, "nudge", "kube-bins", testbed.KubeVersion)
}

// Root returns the root directory of the nudge repository, found upwards
// from the working directory. It fails t when there is none.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module nudge.dev/nudge\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("No nudge repository above the working directory")
		}
		dir = parent
	}
}

// Chart returns the directory of the chart.
func Chart(t testing.TB) string { return filepath.Join(Root(t), "charts", "nudge") }

// Values are chart values, as a values file would hold them.
type Values map[string]any

// Render runs `helm template release` of the chart in namespace with values
// and returns the objects it renders, failing t when helm fails.
func Render(t testing.TB, release, namespace string, values Values) Manifest {
	t.Helper()
	m, out, err := TryRender(t, release, namespace, values)
	if err != nil {
		t.Fatalf("helm template %s -n %s with %v: %v\n%s", release, namespace, values, err, out)
	}
	return m
}

// TryRender is Render that returns helm's error and output instead of
// failing t; out is the rendered YAML when err is nil.
func TryRender(t testing.TB, release, namespace string, values Values) (m Manifest, out []byte, err error) {
	t.Helper()
	return TryRenderFiles(t, release, namespace, nil, values)
}

// TryRenderFiles is TryRender with the values files at paths files first
// (values last, over them), and further arguments of `helm template` (e.g.
// --api-versions).
func TryRenderFiles(t testing.TB, release, namespace string, files []string, values Values, args ...string) (m Manifest, out []byte, err error) {
	t.Helper()
	args = append([]string{"template", release, Chart(t), "--namespace", namespace}, append(valuesArgs(t, files, values), args...)...)
	cmd := exec.Command(Helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		return nil, stderr.Bytes(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	m, err = Parse(out)
	if err != nil {
		t.Fatalf("Parsing the rendered chart: %v\n%s", err, out)
	}
	return m, out, nil
}

// Notes returns the install notes (templates/NOTES.txt) of the chart
// installed as release in namespace with the values files and values, from
// `helm install --dry-run=client`, failing t when helm fails.
func Notes(t testing.TB, release, namespace string, files []string, values Values) string {
	t.Helper()
	args := append([]string{"install", release, Chart(t), "--namespace", namespace, "--dry-run=client"}, valuesArgs(t, files, values)...)
	out, err := exec.Command(Helm(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	_, notes, found := strings.Cut(string(out), "\nNOTES:\n")
	if !found {
		t.Fatalf("No NOTES in helm's output:\n%s", out)
	}
	return notes
}

// valuesArgs returns helm's --values arguments of files, then of values.
func valuesArgs(t testing.TB, files []string, values Values) []string {
	t.Helper()
	// Not in t.TempDir(): helm splits --values at commas, which test names
	// hold.
	dir, err := os.MkdirTemp("", "nudge-chart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "values.json")
	b, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, f := range files {
		args = append(args, "--values", f)
	}
	return append(args, "--values", file)
}

// Testdata returns the path of the file name in test/chart/testdata.
func Testdata(t testing.TB, name string) string {
	return filepath.Join(Root(t), "test", "chart", "testdata", name)
}

// ReloaderChart is the version of Reloader's Helm chart whose published
// default values ReloaderValues returns (Reloader v1.4.21).
const ReloaderChart = "2.2.16"

// ReloaderValues returns the path of Reloader's chart's default values
// file, unchanged as Reloader publishes it (values.yaml of
// https://github.com/stakater/Reloader/tree/master/deployments/kubernetes/chart/reloader
// at chart ReloaderChart), which is kept beside the repository rather than
// in it: shared/peers/reloader-chart-<ReloaderChart>/values.yaml in the
// directory that holds the repository's root,
// where CI has it. It skips t, saying what is missing, where the file is
// not there.
func ReloaderValues(t testing.TB) string {
	t.Helper()
	path := filepath.Join(filepath.Dir(Root(t)), "shared", "peers", "reloader-chart-"+ReloaderChart, "values.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("No values file of Reloader's chart %s at %s (kept beside the repository, in shared/peers, as CI has it): %v",
			ReloaderChart, path, err)
	}
	return path
}

// Manifest is the list of objects of a rendered chart.
type Manifest []*unstructured.Unstructured

// Parse returns the objects of the YAML stream b, skipping empty documents.
func Parse(b []byte) (Manifest, error) {
	var m Manifest
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return m, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		m = append(m, &unstructured.Unstructured{Object: obj})
	}
}

// OfKind returns the objects of kind, in order.
func (m Manifest) OfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Get returns the object of kind named name, or nil.
func (m Manifest) Get(kind, name string) *unstructured.Unstructured {
	for _, o := range m.OfKind(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// Kinds returns the kind of every object, in order.
func (m Manifest) Kinds() []string {
	out := make([]string, len(m))
	for i, o := range m {
		out[i] = o.GetKind()
	}
	return out
}

// Into converts o into the typed object into points to, failing t when it
// does not fit.
func Into(t testing.TB, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
		t.Fatalf("Converting %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
