package ownership_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/app"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// shardLabel is the namespace label the shards of these tests select on: one
// key, one value per shard, so that no namespace can match two of them.
const shardLabel = "nudge.dev/test-shard"

// TestShards: two nudges with disjoint --namespace-selector values (two
// releases of the chart, one per shard) split one cluster between them.
// Each rolls the workloads of its own namespaces, exactly once per change,
// and nothing else; a namespace neither selects is never even baselined; a
// namespace relabelled from one shard to the other is handed over without
// a rollout. How the new owner treats the old owner's state depends on the
// keys: with a key of its own the state is foreign, so the new owner takes a
// baseline (first sight, rule 3), and a change made while nobody owned the
// namespace is not rolled; with one key shared by both releases the state
// carries over as it is, and such a change is rolled once (rule 4).
func TestShards(t *testing.T) {
	t.Parallel()
	for name, sharedKey := range map[string]bool{
		"each release with a key of its own": false,
		"both releases sharing one key":      true,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newShardedCluster(t, sharedKey)
			a, b := c.shard("a"), c.shard("b")
			nsA, nsB, moved, none := c.namespace("a"), c.namespace("b"), c.namespace("a"), c.namespace("none")

			// Each shard baselines its own namespaces, with its own key.
			c.ownedBy(map[*shardNamespace]*shard{nsA: a, nsB: b, moved: a})

			// The same-named ConfigMap changes everywhere: each workload
			// rolls once, by the nudge of its shard alone.
			for _, ns := range []*shardNamespace{nsA, nsB, moved, none} {
				c.change(ns, "2")
			}
			c.rolledTo(map[*shardNamespace]int64{nsA: 1, nsB: 1, moved: 1, none: 0})
			c.g.Expect(c.deployment(none).Annotations).NotTo(HaveKey(workload.AppliedAnnotation),
				"no baseline in a namespace no shard selects")
			c.g.Expect(c.deployment(none).Labels).NotTo(HaveKey(workload.SealLabel))
			c.rolledBy(a, nsA, 1)
			c.rolledBy(b, nsA, 0)
			c.rolledBy(b, nsB, 1)
			c.rolledBy(a, nsB, 0)
			c.rolledBy(a, moved, 1)
			c.rolledBy(a, none, 0)
			c.rolledBy(b, none, 0)
			c.g.Expect(c.trigger(nsA)).NotTo(BeEmpty(), "the pod-template trigger written")

			// Relabelled from A to B: handed over without a rollout, and A
			// does not take it back.
			before := c.deployment(moved).Annotations[workload.AppliedAnnotation]
			c.relabel(moved, "b")
			if sharedKey {
				c.g.Consistently(c.applied(moved)).WithTimeout(3*time.Second).Should(Equal(before),
					"the state written with the shared key to carry over untouched")
			} else {
				c.ownedBy(map[*shardNamespace]*shard{moved: b})
			}
			c.g.Expect(moved.rollouts()).To(Equal(int64(1)), "no rollout for the handover")

			// The next change is B's to roll, once.
			c.change(moved, "3")
			c.rolledTo(map[*shardNamespace]int64{moved: 2})
			c.rolledBy(b, moved, 1)
			c.rolledBy(a, moved, 1)

			// Handed back to A through a gap in which neither shard owns it,
			// with a change made in the gap.
			c.relabel(moved, "none")
			c.change(moved, "4")
			c.g.Consistently(moved.rollouts).WithTimeout(3*time.Second).Should(Equal(int64(2)),
				"no rollout while no shard selects the namespace")
			c.relabel(moved, "a")
			if sharedKey {
				c.rolledTo(map[*shardNamespace]int64{moved: 3})
				c.rolledBy(a, moved, 2)
			} else {
				c.ownedBy(map[*shardNamespace]*shard{moved: a})
				c.g.Expect(moved.rollouts()).To(Equal(int64(2)), "the change made in the gap lost to the first sight")
			}
			c.rolledBy(b, moved, 1)
		})
	}
}

// TestShardOverlap: a namespace two shards both select, the
// misconfiguration docs/scaling.md warns of. With one shared key both
// nudges compute the same state: a change is rolled once, by one of them.
// With a key each, each one's baseline is the other's first sight: they
// would replace each other's state many times a second and never roll;
// instead the one whose takeover is undone at once leaves the workload to
// the other with a Warning (StateContested), and a change is rolled once.
func TestShardOverlap(t *testing.T) {
	t.Parallel()
	for name, sharedKey := range map[string]bool{
		"each release with a key of its own": false,
		"both releases sharing one key":      true,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newShardedCluster(t, sharedKey)
			a, both := c.shard("a"), c.shard("both", "a", "b")
			n := c.namespace("a")
			writes := c.writes(n)

			c.g.Eventually(c.applied(n)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a baseline of %s/web", n.name)
			c.g.Consistently(writes).WithTimeout(3*time.Second).Should(BeNumerically("<=", 6),
				"a few writes of %s/web (its creation included), not a write per reconcile of two nudges", n.name)
			t.Logf("Writes of %s/web before the change: %d", n.name, writes())
			contested := c.events(n, record.ReasonStateContested)
			if sharedKey {
				c.g.Expect(contested()).To(BeEmpty(), "no contest between nudges that share a key")
			} else {
				c.g.Eventually(contested).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a Warning that two nudges contest %s/web", n.name)
			}

			c.change(n, "2")
			c.rolledTo(map[*shardNamespace]int64{n: 1})
			line := "updated 'web' of type 'Deployment' in namespace '" + n.name + "'"
			c.g.Expect(strings.Count(a.nudge.Logs()+both.nudge.Logs(), line)).To(Equal(1), "one rollout logged, by either nudge")
		})
	}
}

// shardedCluster is one TestShards case: its namespaces and nudges, the
// shard label's values unique to the case.
type shardedCluster struct {
	t      *testing.T
	g      *WithT
	ctx    context.Context
	id     string // makes the label values of the case unique
	system string // the shared system namespace, with sharedKey
}

// shard is one nudge release: its name and key.
type shard struct {
	name  string
	keyID string
	nudge *nt.Nudge
}

// shardNamespace is a namespace with a ConfigMap "app" and a Deployment
// "web" that reads it in auto mode.
type shardNamespace struct {
	name      string
	templates *nt.TemplateWrites
}

func (n *shardNamespace) rollouts() int64 { return n.templates.Count("web") }

func newShardedCluster(t *testing.T, sharedKey bool) *shardedCluster {
	c := &shardedCluster{t: t, g: NewWithT(t), ctx: t.Context(), id: utilrand.String(6)}
	if sharedKey {
		c.system = c.newNamespace("shard-sys-")
	}
	return c
}

func (c *shardedCluster) newNamespace(prefix string) string {
	c.t.Helper()
	ns, err := plane.GenerateNamespace(c.ctx, prefix)
	c.g.Expect(err).NotTo(HaveOccurred())
	return ns
}

// shard starts a nudge named name watching every namespace whose shard
// label is one of values (name alone when none is given), as the chart runs
// it (no --namespaces), keeping its key in its own system namespace or,
// with a shared key, in the shared one.
func (c *shardedCluster) shard(name string, values ...string) *shard {
	c.t.Helper()
	system := c.system
	if system == "" {
		system = c.newNamespace("shard-sys-")
	}
	if len(values) == 0 {
		values = []string{name}
	}
	for i, v := range values {
		values[i] = c.value(v)
	}
	s := &shard{name: name}
	s.nudge = nt.Start(c.t, plane.Config(), system, func(o *options.Options) {
		o.Namespaces = nil
		o.NamespaceSelector = shardLabel + " in (" + strings.Join(values, ",") + ")"
		o.LeaderElectionID = "nudge-" + name
	})
	c.g.Eventually(func() error {
		k, err := app.ReadKey(c.ctx, k8s, system, options.Default().KeySecret)
		s.keyID = k.ID()
		return err
	}).WithTimeout(20*time.Second).Should(Succeed(), "nudge %s to create its key", name)
	return s
}

func (c *shardedCluster) value(shard string) string { return c.id + "-" + shard }

// namespace creates a namespace labelled for shard, with its ConfigMap and
// Deployment.
func (c *shardedCluster) namespace(shard string) *shardNamespace {
	c.t.Helper()
	n := &shardNamespace{name: c.newNamespace("shard-")}
	n.templates = nt.WatchTemplates(c.t, k8s, n.name)
	c.relabel(n, shard)
	for _, o := range []client.Object{
		nt.ConfigMap(n.name, "app", map[string]string{"v": "1"}),
		nt.Deployment(n.name, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app")),
	} {
		c.g.Expect(k8s.Create(c.ctx, o)).To(Succeed())
	}
	return n
}

func (c *shardedCluster) relabel(n *shardNamespace, shard string) {
	c.t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+shardLabel+`":"`+c.value(shard)+`"}}}`))
	c.g.Expect(k8s.Patch(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, patch)).To(Succeed())
}

func (c *shardedCluster) change(n *shardNamespace, v string) {
	c.t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"`+v+`"}}`))
	c.g.Expect(k8s.Patch(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n.name, Name: "app"}}, patch)).To(Succeed())
}

func (c *shardedCluster) deployment(n *shardNamespace) *appsv1.Deployment {
	c.t.Helper()
	var d appsv1.Deployment
	c.g.Expect(k8s.Get(c.ctx, client.ObjectKey{Namespace: n.name, Name: "web"}, &d)).To(Succeed())
	return &d
}

func (c *shardedCluster) applied(n *shardNamespace) func() string {
	return func() string { return c.deployment(n).Annotations[workload.AppliedAnnotation] }
}

func (c *shardedCluster) trigger(n *shardNamespace) string {
	return c.deployment(n).Spec.Template.Annotations[workload.RestartedAtAnnotation]
}

// ownedBy waits until the Deployment of each namespace holds a state
// written with the key of its shard, then checks for 3 s that each keeps it:
// no other nudge takes it.
func (c *shardedCluster) ownedBy(owners map[*shardNamespace]*shard) {
	c.t.Helper()
	keys := func() map[string]string {
		out := map[string]string{}
		for n := range owners {
			id, _, _ := strings.Cut(strings.TrimPrefix(c.applied(n)(), "v1."), " ")
			out[n.name] = id
		}
		return out
	}
	want := map[string]string{}
	for n, s := range owners {
		want[n.name] = s.keyID
	}
	c.g.Eventually(keys).WithTimeout(20*time.Second).Should(Equal(want),
		"each Deployment to be baselined with the key of its shard (namespace: key ID)")
	c.g.Consistently(keys).WithTimeout(3*time.Second).Should(Equal(want),
		"each Deployment to stay with the key of its shard (namespace: key ID)")
}

// rolledTo waits until the Deployment of each namespace has had the
// rollouts wanted, then checks for 3 s that no further one follows.
func (c *shardedCluster) rolledTo(want map[*shardNamespace]int64) {
	c.t.Helper()
	counts := func() map[string]int64 {
		out := map[string]int64{}
		for n := range want {
			out[n.name] = n.rollouts()
		}
		return out
	}
	w := map[string]int64{}
	for n, k := range want {
		w[n.name] = k
	}
	c.g.Eventually(counts).WithTimeout(20*time.Second).Should(Equal(w), "the rollouts of each Deployment (namespace: rollouts)")
	c.g.Consistently(counts).WithTimeout(3*time.Second).Should(Equal(w), "no further rollout (namespace: rollouts)")
}

// rolledBy checks that the nudge of s logged want rollouts of the
// Deployment of n.
func (c *shardedCluster) rolledBy(s *shard, n *shardNamespace, want int) {
	c.t.Helper()
	line := "updated 'web' of type 'Deployment' in namespace '" + n.name + "'"
	c.g.Expect(strings.Count(s.nudge.Logs(), line)).To(Equal(want),
		"rollouts of %s/web logged by the nudge of shard %s", n.name, s.name)
}

// writes returns a count, from a watch, of the writes of the Deployment of
// n (its creation included).
func (c *shardedCluster) writes(n *shardNamespace) func() int64 {
	c.t.Helper()
	w, err := k8s.Watch(c.ctx, &appsv1.DeploymentList{}, client.InNamespace(n.name))
	c.g.Expect(err).NotTo(HaveOccurred())
	c.t.Cleanup(w.Stop)
	var count atomic.Int64
	go func() {
		for range w.ResultChan() {
			count.Add(1)
		}
	}()
	return count.Load
}

// events returns the Events about the Deployment of n with reason.
func (c *shardedCluster) events(n *shardNamespace, reason string) func() []eventsv1.Event {
	return (&nt.Env{T: c.t, G: c.g, Ctx: c.ctx, NS: n.name, K8s: k8s}).Events("web", reason)
}
