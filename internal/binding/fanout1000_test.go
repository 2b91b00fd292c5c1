package binding_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// One Secret bound into 1,000 Harbors, the size of make bench's value-binding
// fan-out: a rotation reaches every Harbor, every status records it, and
// kube-apiserver closes no watch of Harbors or ValueBindings for falling
// behind (nudge's were closed so while they shared one HTTP/2 connection
// with its applies and status writes, see docs/performance.md, and once the
// connections were apart, while 64 status writes at a time kept the API
// server busy: statusWriters). The test runs alone (not in parallel), so
// that the API server's count of closed watches is nudge's.
func TestFanOutOfAThousandKeepsTheTargetWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 bindings")
	}
	const n = 1000
	installCRDs(t)
	e := &env{t: t, g: NewWithT(t), ctx: t.Context()}
	ns, err := suite.Plane.GenerateNamespace(e.ctx, "vb-")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.ns = ns
	e.create(nt.Secret(e.ns, "shared", map[string]string{"accesskey": "AKIATHOUSAND0001"}))
	names := harborNames(n)
	e.createHarbors(names)
	e.nudge = e.start(nil)
	e.bindShared(names)
	e.g.Eventually(e.holding(n)).WithTimeout(2*time.Minute).WithPolling(time.Second).
		Should(Equal(map[string]int{"AKIATHOUSAND0001": n}), "every Harbor holds the first value")
	e.g.Eventually(e.recorded(n)).WithTimeout(2*time.Minute).WithPolling(time.Second).
		Should(HaveLen(1), "every binding's status records one fingerprint")
	before := map[string]int{"harbors": terminatedWatches(t, "harbors"), "valuebindings": terminatedWatches(t, "valuebindings")}

	rotated := time.Now()
	e.updateSecret("shared", map[string]string{"accesskey": "AKIATHOUSAND0002"})
	e.g.Eventually(e.holding(n)).WithTimeout(2*time.Minute).WithPolling(time.Second).
		Should(Equal(map[string]int{"AKIATHOUSAND0002": n}), "every Harbor holds the rotated value")
	t.Logf("Every Harbor held the rotated value within %v (polled each second)", time.Since(rotated).Round(time.Second))
	e.g.Eventually(e.recorded(n)).WithTimeout(2*time.Minute).WithPolling(time.Second).
		Should(HaveLen(1), "every binding's status records the rotated Secret's fingerprint")
	t.Logf("Every status recorded it within %v", time.Since(rotated).Round(time.Second))
	e.g.Expect(map[string]int{"harbors": terminatedWatches(t, "harbors"), "valuebindings": terminatedWatches(t, "valuebindings")}).To(Equal(before),
		"kube-apiserver closed no watch of Harbors or ValueBindings for falling behind during the fan-out and the status writes (apiserver_terminated_watchers_total)")
}

// harborNames returns n Harbor names, harbor-0000 on.
func harborNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("harbor-%04d", i)
	}
	return names
}

// createHarbors applies a Harbor of each name, as argocd-controller would.
func (e *env) createHarbors(names []string) {
	e.t.Helper()
	parallel(e.t, names, func(name string) error {
		return suite.K8s.Apply(e.ctx, client.ApplyConfigurationFromUnstructured(harbor(e.ns, name)),
			client.FieldOwner("argocd-controller"), client.ForceOwnership)
	})
}

// bindShared creates, per name, a ValueBinding of that name that binds the
// Secret "shared"'s accesskey into the Harbor of that name.
func (e *env) bindShared(names []string) {
	e.t.Helper()
	parallel(e.t, names, func(name string) error {
		return suite.K8s.Create(e.ctx, valueBinding(e.ns, name, name, fromSecret("spec.imageChartStorage.s3.accesskey", "shared", "accesskey")))
	})
}

// holding returns how many Harbors of the namespace hold each access key,
// once there are n, from one LIST.
func (e *env) holding(n int) func() map[string]int {
	return func() map[string]int {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("goharbor.io/v1beta1")
		list.SetKind("HarborList")
		e.g.Expect(suite.K8s.List(e.ctx, list, client.InNamespace(e.ns))).To(Succeed())
		if len(list.Items) < n {
			return nil
		}
		out := map[string]int{}
		for _, h := range list.Items {
			v, _, _ := unstructured.NestedString(h.Object, accessKey...)
			out[v]++
		}
		return out
	}
}

// recorded returns the distinct fingerprints that the namespace's bindings
// record as applied, "" for one not Ready for its generation; nil until there
// are n.
func (e *env) recorded(n int) func() map[string]bool {
	return func() map[string]bool {
		var list v1alpha1.ValueBindingList
		e.g.Expect(suite.K8s.List(e.ctx, &list, client.InNamespace(e.ns))).To(Succeed())
		if len(list.Items) < n {
			return nil
		}
		out := map[string]bool{}
		for _, b := range list.Items {
			if b.Status.ObservedGeneration != b.Generation || b.Status.AppliedFingerprint == "" {
				out[""] = true
				continue
			}
			out[b.Status.AppliedFingerprint] = true
		}
		return out
	}
}

// terminatedWatches returns kube-apiserver's
// apiserver_terminated_watchers_total for resource: the watches it closed
// because their client did not keep up.
func terminatedWatches(t *testing.T, resource string) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(suite.Plane.Config())
	if err != nil {
		t.Fatal(err)
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "apiserver_terminated_watchers_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("reading %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}

// parallel calls f with every name from 32 goroutines and fails t on the
// first error.
func parallel(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(32)
	for _, name := range names {
		g.Go(func() error {
			if err := f(name); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
