package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/internal/nudgetest"
)

// The value-binding scenario: Harbors (harbor-operator's kind, from the
// test CRD) whose S3 access key is bound to a Secret key.
const (
	bindingNamespace = "bench-bindings"
	sharedSecret     = "shared"    // the Secret of the fan-out bindings
	accessKey        = "accesskey" // the key bound
	bindingTargets   = "Harbor.goharbor.io"
)

var (
	// accessKeyPath is the bound field: spec.imageChartStorage.s3.accesskey.
	accessKeyPath = []string{"spec", "imageChartStorage", "s3", "accesskey"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	harborGVR     = schema.GroupVersionResource{Group: "goharbor.io", Version: "v1beta1", Resource: "harbors"}
	bindingGVR    = schema.GroupVersionResource{Group: "nudge.dev", Version: "v1alpha1", Resource: "valuebindings"}
)

// bindingCRDs are the CRDs the scenario installs before the controller
// starts, relative to the repository's root: the ValueBinding CRD the chart
// ships, and the tests' Harbor CRD (written from harbor-operator's API).
var bindingCRDs = []string{
	"charts/nudge/crds/nudge.dev_valuebindings.yaml",
	harborCRDPath,
}

// installCRDs creates the CRDs in the files of paths (relative to the
// repository's root, or, as "module@version:path", of a Go module, see
// nudgetest.ModuleFile) and waits up to 30 s until the API server serves
// each resource of gvrs.
func installCRDs(ctx context.Context, dyn dynamic.Interface, paths []string, gvrs ...schema.GroupVersionResource) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	for _, path := range paths {
		var data []byte
		if module, file, ok := strings.Cut(path, ":"); ok {
			data, err = nudgetest.ModuleFile(ctx, module, file)
		} else {
			data, err = os.ReadFile(filepath.Join(root, path))
		}
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, gvr := range gvrs {
		if err := poll(ctx, 30*time.Second, func() error {
			_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}); err != nil {
			return fmt.Errorf("the API server does not serve %s: %w", gvr, err)
		}
	}
	return nil
}

// bindings runs the scenario: a setup phase that creates the Secrets,
// Harbors and bindings and waits until every Harbor holds its value, then
// the latency and fan-out phases.
func (b *bench) bindings(ctx context.Context) error {
	n, fan := b.cfg.BindingLatency, b.cfg.BindingFanOut
	res := &results.Bindings{Load: results.LoadAvg(), Bindings: n + fan, Changes: n,
		FanOut: results.Many{Changes: 1, Workloads: fan}}
	b.res.Bindings = res
	if err := b.phase("binding-setup"); err != nil {
		return err
	}
	w, err := startTargetWatcher(ctx, b.watchDyn)
	if err != nil {
		return err
	}
	sw, err := startStatusWatcher(ctx, b.watchDyn)
	if err != nil {
		return err
	}
	b.harbors, b.statuses = w, sw
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bindingNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var objs []creation
	want := map[string]string{} // Harbor → value
	secret := func(name, value string) creation {
		return creation{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": bindingNamespace},
			"data":     map[string]any{accessKey: base64.StdEncoding.EncodeToString([]byte(value))},
		}}}
	}
	bind := func(harbor, source string) {
		objs = append(objs, creation{gvr: harborGVR, obj: harborObject(harbor)},
			creation{gvr: bindingGVR, obj: bindingObject(harbor, source)})
		want[harbor] = initialValue(source)
	}
	objs = append(objs, secret(sharedSecret, initialValue(sharedSecret)))
	for i := range n {
		objs = append(objs, secret(latencySecret(i), initialValue(latencySecret(i))))
	}
	begin := time.Now()
	for i := range n {
		bind(latencyHarbor(i), latencySecret(i))
	}
	for i := range fan {
		bind(fanOutHarbor(i), sharedSecret)
	}
	if err := createDynamic(ctx, b.dyn, b.cfg.Creators, objs); err != nil {
		return err
	}
	for harbor, value := range want {
		if _, missing := w.wait(ctx, []string{harbor}, value, begin, b.cfg.WaitTimeout); len(missing) > 0 {
			return fmt.Errorf("harbor %s did not get its first value within %v", harbor, b.cfg.WaitTimeout)
		}
	}
	res.SetupSeconds = ptrSeconds(w.lastSeen(begin))
	logf("Bindings: %d bindings applied %.3f s after the first was created", n+fan, *res.SetupSeconds)
	// The latency phase starts once nudge has recorded every status, so
	// that it measures changes, not the end of the setup.
	names := make([]string, 0, len(want))
	for harbor := range want {
		names = append(names, harbor)
	}
	took, err := sw.recorded(ctx, names, nil, begin, b.cfg.WaitTimeout)
	if err != nil {
		return err
	}
	res.SetupStatusSeconds = ptrSeconds(took)
	logf("Bindings: every status recorded %.3f s after the first was created", took.Seconds())
	if err := b.quietEvents(ctx); err != nil {
		return err
	}

	if err := b.phase("binding-latency"); err != nil {
		return err
	}
	var lats []time.Duration
	for i := range n {
		value := fmt.Sprintf("AKIA%06dROTATED", i)
		sent, err := b.rotate(ctx, latencySecret(i), value)
		if err != nil {
			return err
		}
		seen, missing := w.wait(ctx, []string{latencyHarbor(i)}, value, sent, b.cfg.ChangeTimeout)
		if len(missing) > 0 {
			res.Misses++
			logf("Missed: Harbor %s did not get %s's new value within %v", latencyHarbor(i), latencySecret(i), b.cfg.ChangeTimeout)
			continue
		}
		lats = append(lats, seen[latencyHarbor(i)].Sub(sent))
	}
	res.Latency = stats.NewDistribution(lats)
	logf("Binding latency: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, %d misses",
		res.Latency.P50, res.Latency.P90, res.Latency.P99, res.Latency.Max, res.Misses)

	if fan == 0 {
		return nil
	}
	if err := b.quietEvents(ctx); err != nil {
		return err
	}
	if err := b.phase("binding-fanout"); err != nil {
		return err
	}
	harbors := make([]string, fan)
	for i := range harbors {
		harbors[i] = fanOutHarbor(i)
	}
	before := sw.fingerprints()
	defer b.prof().cpu(ctx, "cpu-binding-fanout.pprof", scenarioProfile)()
	defer b.prof().apiserverCPU(ctx, b.cs.CoreV1().RESTClient(), "cpu-binding-fanout-apiserver.pprof", scenarioProfile)()
	sent, err := b.rotateShared(ctx, &res.FanOut, harbors, "AKIASHAREDROTATED")
	if err != nil {
		return err
	}
	took, err = sw.recorded(ctx, harbors, before, sent, b.cfg.WaitTimeout)
	if err != nil {
		return err
	}
	res.FanOutStatusSeconds = ptrSeconds(took)
	logf("Binding fan-out: every status recorded %.3f s after the change", took.Seconds())
	return nil
}

// rotateShared sets the shared Secret's bound key to value and fills f with
// the times until each of harbors held it, as w saw them. It returns when
// the change was sent.
func (b *bench) rotateShared(ctx context.Context, f *results.Many, harbors []string, value string) (time.Time, error) {
	sent, err := b.rotate(ctx, sharedSecret, value)
	if err != nil {
		return sent, err
	}
	f.Load = results.LoadAvg()
	f.SentSeconds = stats.Seconds(time.Since(sent))
	seen, missing := b.harbors.wait(ctx, harbors, value, sent, b.cfg.WaitTimeout)
	fill(f, seen, missing, sent)
	logf("Binding fan-out: %d of %d Harbors updated, last %s s after the change", f.Rolled, len(harbors), results.OptSeconds(f.LastSeconds))
	return sent, nil
}

// fill sets f's counts and times from when each object was seen done after
// since, and the missing ones.
func fill(f *results.Many, seen map[string]time.Time, missing []string, since time.Time) {
	f.Rolled, f.Misses = len(seen), len(missing)
	var after []time.Duration
	for _, at := range seen {
		after = append(after, at.Sub(since))
	}
	sort.Slice(after, func(i, j int) bool { return after[i] < after[j] })
	if len(after) > 0 {
		f.FirstSeconds, f.P50Seconds, f.LastSeconds = ptrSeconds(after[0]), ptrSeconds(after[(len(after)-1)/2]), ptrSeconds(after[len(after)-1])
		if len(missing) == 0 {
			f.AllSeconds = f.LastSeconds
		}
	}
}

// quietEvents waits until the controller's Events of the phase before are
// written (see eventsQuiet), so that the next phase times its changes alone.
func (b *bench) quietEvents(ctx context.Context) error {
	waited, err := b.eventsQuiet(ctx, time.Second, b.cfg.WaitTimeout)
	if err == nil {
		logf("Bindings: the controller wrote no Event for 1 s after waiting %.3f s", waited.Seconds())
	}
	return err
}

// rotate sets the bound key of Secret name to value and returns when the
// update was sent.
func (b *bench) rotate(ctx context.Context, name, value string) (time.Time, error) {
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, accessKey, base64.StdEncoding.EncodeToString([]byte(value)))
	sent := time.Now()
	_, err := b.cs.CoreV1().Secrets(bindingNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return sent, err
}

func latencySecret(i int) string { return fmt.Sprintf("l-%04d", i) }
func latencyHarbor(i int) string { return fmt.Sprintf("h-l-%04d", i) }
func fanOutHarbor(i int) string  { return fmt.Sprintf("h-f-%04d", i) }
func initialValue(secret string) string {
	return "AKIA-" + secret + "-INITIAL"
}

// bindingObject is the ValueBinding of harbor's access key to the Secret
// source, in its public shape.
func bindingObject(harbor, source string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nudge.dev/v1alpha1", "kind": "ValueBinding",
		"metadata": map[string]any{"name": harbor, "namespace": bindingNamespace},
		"spec": map[string]any{
			"target": map[string]any{"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor", "name": harbor},
			"values": []any{map[string]any{
				"fieldPath": "spec.imageChartStorage.s3.accesskey",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": source, "key": accessKey}},
			}},
		},
	}}
}

// creation is one object to create with the dynamic client.
type creation struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// createDynamic creates objs in order of kind (every Secret, then Harbor,
// then binding, as given) with workers parallel creators.
func createDynamic(ctx context.Context, dyn dynamic.Interface, workers int, objs []creation) error {
	byKind := map[schema.GroupVersionResource][]creation{}
	var order []schema.GroupVersionResource
	for _, c := range objs {
		if _, ok := byKind[c.gvr]; !ok {
			order = append(order, c.gvr)
		}
		byKind[c.gvr] = append(byKind[c.gvr], c)
	}
	for _, gvr := range order {
		jobs := make(chan creation)
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for c := range jobs {
					_, err := dyn.Resource(c.gvr).Namespace(c.obj.GetNamespace()).Create(ctx, c.obj, metav1.CreateOptions{})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						errs <- fmt.Errorf("creating %s %s: %w", c.gvr.Resource, c.obj.GetName(), err)
						return
					}
				}
			})
		}
		for _, c := range byKind[gvr] {
			jobs <- c
		}
		close(jobs)
		wg.Wait()
		close(errs)
		if err := errors.Join(collect(errs)...); err != nil {
			return err
		}
		logf("Created %d %s", len(byKind[gvr]), gvr.Resource)
	}
	return nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// poll calls f every 100 ms until it succeeds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// repoRoot returns the nudge repository's root, found upwards from the
// working directory (make bench runs in it).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "charts", "nudge", "crds")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no nudge repository above the working directory: run the benchmark from it")
		}
		dir = parent
	}
}
