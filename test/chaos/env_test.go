package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// auto opts a workload in to every source its pod spec reads.
var auto = map[string]string{"nudge.dev/auto": "true"}

// Timeouts of the waits. The machine is small and shared: they are generous,
// and a wait ends as soon as its condition holds.
const (
	// settle is how long a count must stay put to show that nothing more
	// comes (no second rollout, no spurious one).
	settle = 3 * time.Second
	// fanOut bounds a wait for hundreds of baselines or rollouts.
	fanOut = 90 * time.Second
)

// env is one test's namespace on a plane, its client and its rollout count.
type env struct {
	t        *testing.T
	g        *WithT
	ctx      context.Context
	plane    *testbed.Plane
	c        client.Client
	ns       string
	rollouts *rollouts
}

// setup creates a namespace on p for t and starts counting its rollouts.
func setup(t *testing.T, p *testbed.Plane, c client.Client) *env {
	t.Helper()
	e := &env{t: t, g: NewWithT(t), ctx: t.Context(), plane: p, c: c}
	ns, err := p.GenerateNamespace(e.ctx, "chaos-")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.ns = ns
	e.rollouts = watchRollouts(t, p, ns)
	return e
}

// create creates objs, 16 at a time.
func (e *env) create(objs ...client.Object) {
	e.t.Helper()
	var eg errgroup.Group
	eg.SetLimit(16)
	for _, o := range objs {
		eg.Go(func() error {
			if err := e.c.Create(e.ctx, o); err != nil {
				return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
			}
			return nil
		})
	}
	e.g.Expect(eg.Wait()).To(Succeed())
}

// kubeconfig writes a kubeconfig for cfg and returns its path.
func (e *env) kubeconfig(cfg *rest.Config) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "kubeconfig")
	e.g.Expect(nudgetest.WriteKubeconfig(path, cfg, "")).To(Succeed())
	return path
}

// nudge starts the nudge binary with kubeconfig, watching the test's
// namespace and keeping its key there, with the flags in extra.
func (e *env) nudge(kubeconfig string, extra ...string) *nudgetest.Process {
	e.t.Helper()
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--namespaces=" + e.ns,
		"--system-namespace=" + e.ns,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}, extra...)
	return nudgetest.StartProcess(e.t, nudgeBin, nil, args...)
}

// baselined waits until n Deployments carry nudge's applied state.
func (e *env) baselined(n int) {
	e.t.Helper()
	e.g.Eventually(e.rollouts.Baselined).WithTimeout(fanOut).Should(Equal(n),
		"nudge to record the baseline of %d Deployments", n)
	total, err := e.rollouts.Total()
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(total).To(BeZero(), "a baseline never rolls")
}

// rolledBetween waits until at least low rollouts have been counted, and
// checks that fewer than high have: the moment for a kill.
func (e *env) rolledBetween(low, high int) {
	e.t.Helper()
	e.g.Eventually(e.rollouts.Total).WithTimeout(fanOut).WithPolling(2*time.Millisecond).Should(
		BeNumerically(">=", low), "at least %d rollouts", low)
	total, err := e.rollouts.Total()
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(total).To(BeNumerically("<", high), "fewer than %d rollouts when the condition was met", high)
}

// rolledEach waits until each of names has been rolled n times and no other
// Deployment of the namespace was, then checks for settle that no further
// rollout follows. A Deployment rolled more than n times fails it at once.
func (e *env) rolledEach(names []string, n int) {
	e.t.Helper()
	want := make(map[string]int, len(names))
	for _, name := range names {
		want[name] = n
	}
	counts := func() (map[string]int, error) {
		got, err := e.rollouts.Counts()
		if err != nil {
			return nil, err
		}
		for name, c := range got {
			if c > want[name] {
				return nil, StopTrying(fmt.Sprintf("Deployment %s was rolled %d times, want %d", name, c, want[name]))
			}
		}
		return got, nil
	}
	e.g.Eventually(counts).WithTimeout(fanOut).Should(Equal(want), "each of %d Deployments rolled %d time(s), no other", len(names), n)
	e.g.Consistently(counts).WithTimeout(settle).Should(Equal(want), "no Deployment rolled again")
}

// updateConfigMap sets key k of ConfigMap name to v.
func (e *env) updateConfigMap(name, k, v string) {
	e.t.Helper()
	var cm corev1.ConfigMap
	e.g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &cm)).To(Succeed())
	cm.Data[k] = v
	e.g.Expect(e.c.Update(e.ctx, &cm)).To(Succeed(), "updating ConfigMap %s", name)
}
