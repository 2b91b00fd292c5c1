// Package image checks the release image `make image` writes to bin/image
// (an OCI image layout): its platforms, config and files, its SBOM, and
// that the binary taken out of its layer, run with the chart's own
// arguments on a test control plane, rolls a Deployment once per change.
// `make test` runs `make image` first; alone, run `make image` then
// `go test ./test/image/`.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

const root = "../.."

var (
	plane *testbed.Plane
	k8s   client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane) {
		plane = p
		c, err := client.New(p.Config(), client.Options{})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}

// imageDir is where make image writes the image.
var imageDir = filepath.Join(root, "bin", "image")

// built is the image make image wrote, read once: its layers are tens of
// megabytes.
var built = sync.OnceValues(func() (*layout, error) { return readLayout(imageDir) })

// builtImage returns the image make image wrote, failing t when there is
// none or it does not read.
func builtImage(t *testing.T) *layout {
	t.Helper()
	l, err := built()
	if err != nil {
		t.Fatalf("Reading the image in %s (run make image): %v", imageDir, err)
	}
	return l
}

// imageBinary returns the content of /nudge of the image's platform p.
func imageBinary(t *testing.T, l *layout, p platform) []byte {
	t.Helper()
	for _, img := range l.images {
		if img.platform == p {
			files, err := l.files(img)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := files[binaryPath]
			if !ok {
				t.Fatalf("No /%s in the %s image", binaryPath, p)
			}
			return e.body
		}
	}
	t.Fatalf("No %s image", p)
	return nil
}

// extract writes the host platform's /nudge of the image into a temporary
// directory and returns its path.
func extract(t *testing.T, l *layout) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nudge")
	if err := os.WriteFile(path, imageBinary(t, l, platform{runtime.GOOS, runtime.GOARCH}), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The image make image wrote is nudge's: both platforms, run as 65532,
// /nudge its entrypoint, every label, no shell, the CA bundle; each
// binary is nudge's, built static for its platform, and the host's reports
// the version its label says.
func TestImageIsNudgesImage(t *testing.T) {
	g := NewWithT(t)
	l := builtImage(t)
	g.Expect(check(l)).To(BeEmpty(), "what is wrong with the image in %s", imageDir)

	for _, img := range l.images {
		info, err := buildinfo.Read(bytes.NewReader(imageBinary(t, l, img.platform)))
		g.Expect(err).NotTo(HaveOccurred(), "the build info of the %s binary", img.platform)
		g.Expect(info.Path).To(Equal("nudge.dev/nudge/cmd/nudge"))
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		g.Expect(settings).To(And(HaveKeyWithValue("GOOS", img.platform.OS), HaveKeyWithValue("GOARCH", img.platform.Architecture),
			HaveKeyWithValue("CGO_ENABLED", "0"), HaveKeyWithValue("-trimpath", "true")), "the %s binary built as make build builds", img.platform)
	}

	out, err := exec.Command(extract(t, l), "version").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	for _, img := range l.images {
		version := img.config.Config.Labels["org.opencontainers.image.version"]
		g.Expect(string(out)).To(HavePrefix("nudge version "+version+" ("), "the %s image's version label is the binary's version", img.platform)
	}
}

// cycloneDX is the part of a CycloneDX JSON BOM the test reads
// (https://cyclonedx.org/docs/1.6/json/).
type cycloneDX struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component component `json:"component"`
	} `json:"metadata"`
	Components []component `json:"components"`
}

type component struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// The SBOM beside the image names nudge's module at the image's version
// and every module linked into the binary at the version it was built
// with, controller-runtime at go.mod's.
func TestSBOMListsTheBinarysModules(t *testing.T) {
	g := NewWithT(t)
	l := builtImage(t)
	b, err := os.ReadFile(filepath.Join(imageDir, "sbom.cdx.json"))
	g.Expect(err).NotTo(HaveOccurred(), "the SBOM make image writes")
	var bom cycloneDX
	g.Expect(json.Unmarshal(b, &bom)).To(Succeed())
	g.Expect(bom.BOMFormat).To(Equal("CycloneDX"))
	g.Expect(bom.Metadata.Component.Name).To(Equal("nudge.dev/nudge"))
	g.Expect(bom.Metadata.Component.Version).To(Equal(l.images[0].config.Config.Labels["org.opencontainers.image.version"]))

	listed := map[string]string{}
	for _, c := range bom.Components {
		listed[c.Name] = c.Version
	}
	bin := imageBinary(t, l, platform{"linux", "amd64"})
	info, err := buildinfo.Read(bytes.NewReader(bin))
	g.Expect(err).NotTo(HaveOccurred(), "the build info of the image's linux/amd64 binary")
	g.Expect(info.Deps).NotTo(BeEmpty())
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		g.Expect(listed).To(HaveKeyWithValue(dep.Path, dep.Version), "the binary links %s", dep.Path)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/controller-runtime (v\S+)`).FindSubmatch(gomod)
	g.Expect(m).NotTo(BeNil(), "controller-runtime in go.mod")
	g.Expect(listed).To(HaveKeyWithValue("sigs.k8s.io/controller-runtime", string(m[1])))
}

// chartContainer returns the chart's Deployment, rendered with its default
// values in namespace, and its nudge container.
func chartContainer(t *testing.T, namespace string) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	deploys := charttest.Render(t, "nudge", namespace, nil).OfKind("Deployment")
	if len(deploys) != 1 {
		t.Fatalf("The chart renders %d Deployments, want 1", len(deploys))
	}
	var d appsv1.Deployment
	charttest.Into(t, deploys[0], &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "nudge" {
			return &d, c
		}
	}
	t.Fatal("No nudge container in the chart's Deployment")
	return nil, corev1.Container{}
}

// localArgs returns the chart container's args as they run here: the
// servers on the 127.0.0.1 addresses metrics and probe instead of every
// interface, $(POD_NAMESPACE) expanded to namespace (the kubelet does it
// from the downward API), and the plane's kubeconfig. It fails t when the
// chart's args hold a server or variable it does not know.
func localArgs(t *testing.T, c corev1.Container, namespace, metrics, probe, kubeconfig string) []string {
	t.Helper()
	var args []string
	servers := 0
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a, servers = "--metrics-bind-address="+metrics, servers+1
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a, servers = "--health-probe-bind-address="+probe, servers+1
		}
		a = strings.ReplaceAll(a, "$(POD_NAMESPACE)", namespace)
		if strings.Contains(a, "$(") {
			t.Fatalf("The chart's arg %q uses a variable the test does not set", a)
		}
		args = append(args, a)
	}
	if servers != 2 {
		t.Fatalf("The chart's args %q: want a metrics and a probe address", c.Args)
	}
	return append(args, "--kubeconfig="+kubeconfig)
}

// The image's binary, taken out of its layer and run with the chart's own
// args (listening on 127.0.0.1 only, the plane's kubeconfig), rolls a
// Deployment once for each of two changes of its ConfigMap, and no more.
func TestImageBinaryRollsOncePerChangeWithTheChartsArgs(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	l := builtImage(t)
	ns, err := plane.GenerateNamespace(ctx, "image-")
	g.Expect(err).NotTo(HaveOccurred())

	d, c := chartContainer(t, ns)
	img := l.images[0].config.Config
	g.Expect(fmt.Sprintf("%d:%d", *d.Spec.Template.Spec.SecurityContext.RunAsUser, *d.Spec.Template.Spec.SecurityContext.RunAsGroup)).
		To(Equal(img.User), "the chart runs the image as its user")
	for _, p := range c.Ports {
		g.Expect(img.ExposedPorts).To(HaveKey(fmt.Sprintf("%d/tcp", p.ContainerPort)), "the image exposes the chart's port %s", p.Name)
	}
	g.Expect(c.Env).To(ContainElement(HaveField("Name", "POD_NAMESPACE")), "the chart sets $POD_NAMESPACE")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(nudgetest.WriteKubeconfig(kubeconfig, plane.Config(), "")).To(Succeed())
	addrs := nudgetest.FreeAddrs(t, 2)
	metrics, probe := addrs[0], addrs[1]
	p := nudgetest.StartProcess(t, extract(t, l), []string{"POD_NAMESPACE=" + ns},
		localArgs(t, c, ns, metrics, probe, kubeconfig)...)
	g.Eventually(func() string { return nudgetest.Get("http://" + probe + "/readyz") }).WithTimeout(60*time.Second).Should(Equal("ok"), "nudge ready")
	g.Eventually(func() string { return nudgetest.Get("http://" + metrics + "/metrics") }).WithTimeout(30*time.Second).Should(ContainSubstring("nudge_"), "nudge's metrics")

	cm := nudgetest.ConfigMap(ns, "web-config", map[string]string{"greeting": "hello"})
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	deploy := nudgetest.Deployment(ns, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nudgetest.EnvFrom("ConfigMap", cm.Name))
	rollouts := watchRollouts(t, ns, deploy.Name)
	g.Expect(k8s.Create(ctx, deploy)).To(Succeed())
	key := client.ObjectKeyFromObject(deploy)
	g.Eventually(annotations(ctx, key)).WithTimeout(30*time.Second).Should(HaveKey(workload.AppliedAnnotation),
		"nudge's first sight of the Deployment: its applied state")
	g.Expect(rollouts()).To(BeEmpty(), "no rollout at first sight")

	window := 5 * time.Second // the chart's rolloutWindow
	g.Expect(c.Args).To(ContainElement("--rollout-window=" + window.String()))
	for change := 1; change <= 2; change++ {
		cm.Data["greeting"] = fmt.Sprintf("hello %d", change)
		g.Expect(k8s.Update(ctx, cm)).To(Succeed())
		g.Eventually(rollouts).WithTimeout(30*time.Second).Should(HaveLen(change), "rollout %d of the Deployment", change)
		// A second rollout of one change would come at the latest at the
		// window's end.
		g.Consistently(rollouts).WithTimeout(window+3*time.Second).Should(HaveLen(change), "one rollout for change %d", change)
	}
	g.Expect(p.Exited()).To(BeFalse(), "nudge still running")
}

// watchRollouts watches the Deployment namespace/name until t ends and
// returns a func that returns the distinct values of its trigger, the pod
// template's nudge.dev/restarted-at, in the order they were written: one a
// rollout.
func watchRollouts(t *testing.T, namespace, name string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(plane.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := nudgetest.Watch(t, wc, &appsv1.DeploymentList{}, client.InNamespace(namespace),
		client.MatchingFields{"metadata.name": name})
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range events {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			at := d.Spec.Template.Annotations[workload.RestartedAtAnnotation]
			mu.Lock()
			if at != "" && !slices.Contains(seen, at) {
				seen = append(seen, at)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// annotations returns a func that returns the Deployment's metadata
// annotations.
func annotations(ctx context.Context, key client.ObjectKey) func() (map[string]string, error) {
	return func() (map[string]string, error) {
		var d appsv1.Deployment
		err := k8s.Get(ctx, key, &d)
		return d.Annotations, err
	}
}

// make chart-package VERSION=vX.Y.Z packages the chart at version X.Y.Z,
// appVersion vX.Y.Z (the image's tag); a VERSION that is not a release tag
// packages nothing.
func TestChartPackageTakesTheTagsVersion(t *testing.T) {
	g := NewWithT(t)
	bin := t.TempDir()
	makeArgs := func(version string) []string {
		return []string{"-s", "-C", root, "chart-package", "VERSION=" + version, "BIN=" + bin,
			"KUBE_BINS_DIR=" + filepath.Dir(charttest.Helm(t))}
	}
	out, err := exec.Command("make", makeArgs("v1.2.3-rc.1")...).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	f, err := os.Open(filepath.Join(bin, "chart", "nudge-1.2.3-rc.1.tgz"))
	g.Expect(err).NotTo(HaveOccurred(), "the packaged chart")
	defer f.Close()
	zr, err := gzip.NewReader(f)
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(zr)
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	for {
		h, err := tr.Next()
		g.Expect(err).NotTo(HaveOccurred(), "nudge/Chart.yaml in the package")
		if h.Name == "nudge/Chart.yaml" {
			b, err := io.ReadAll(tr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(yaml.Unmarshal(b, &chart)).To(Succeed())
			break
		}
	}
	g.Expect(chart.Version).To(Equal("1.2.3-rc.1"))
	g.Expect(chart.AppVersion).To(Equal("v1.2.3-rc.1"))

	out, err = exec.Command("make", makeArgs("1.2")...).CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("VERSION=1.2 is not a release tag vX.Y.Z"))
}
