package ownership_test

import (
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
			c.OwnedBy(map[*nt.Space]*nt.Member{nsA: a, nsB: b, moved: a})

			// The same-named ConfigMap changes everywhere: each workload
			// rolls once, by the nudge of its shard alone.
			for _, ns := range []*nt.Space{nsA, nsB, moved, none} {
				c.Change(ns, "app", "2")
			}
			c.RolledTo(map[*nt.Space]int64{nsA: 1, nsB: 1, moved: 1, none: 0})
			c.G.Expect(c.deployment(none).Annotations).NotTo(HaveKey(workload.AppliedAnnotation),
				"no baseline in a namespace no shard selects")
			c.G.Expect(c.deployment(none).Labels).NotTo(HaveKey(workload.SealLabel))
			c.rolledBy(a, nsA, 1)
			c.rolledBy(b, nsA, 0)
			c.rolledBy(b, nsB, 1)
			c.rolledBy(a, nsB, 0)
			c.rolledBy(a, moved, 1)
			c.rolledBy(a, none, 0)
			c.rolledBy(b, none, 0)
			c.G.Expect(c.trigger(nsA)).NotTo(BeEmpty(), "the pod-template trigger written")

			// Relabelled from A to B: handed over without a rollout, and A
			// does not take it back.
			before := c.deployment(moved).Annotations[workload.AppliedAnnotation]
			c.relabel(moved, "b")
			if sharedKey {
				c.G.Consistently(c.applied(moved)).WithTimeout(3*time.Second).Should(Equal(before),
					"the state written with the shared key to carry over untouched")
			} else {
				c.OwnedBy(map[*nt.Space]*nt.Member{moved: b})
			}
			c.G.Expect(moved.Rollouts()).To(Equal(int64(1)), "no rollout for the handover")

			// The next change is B's to roll, once.
			c.Change(moved, "app", "3")
			c.RolledTo(map[*nt.Space]int64{moved: 2})
			c.rolledBy(b, moved, 1)
			c.rolledBy(a, moved, 1)

			// Handed back to A through a gap in which neither shard owns it,
			// with a change made in the gap.
			c.relabel(moved, "none")
			c.Change(moved, "app", "4")
			c.G.Consistently(moved.Rollouts).WithTimeout(3*time.Second).Should(Equal(int64(2)),
				"no rollout while no shard selects the namespace")
			c.relabel(moved, "a")
			if sharedKey {
				c.RolledTo(map[*nt.Space]int64{moved: 3})
				c.rolledBy(a, moved, 2)
			} else {
				c.OwnedBy(map[*nt.Space]*nt.Member{moved: a})
				c.G.Expect(moved.Rollouts()).To(Equal(int64(2)), "the change made in the gap lost to the first sight")
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

			c.G.Eventually(c.applied(n)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a baseline of %s/web", n.Name)
			c.G.Consistently(writes).WithTimeout(3*time.Second).Should(BeNumerically("<=", 6),
				"a few writes of %s/web (its creation included), not a write per reconcile of two nudges", n.Name)
			t.Logf("Writes of %s/web before the change: %d", n.Name, writes())
			contested := c.events(n, record.ReasonStateContested)
			if sharedKey {
				c.G.Expect(contested()).To(BeEmpty(), "no contest between nudges that share a key")
			} else {
				c.G.Eventually(contested).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a Warning that two nudges contest %s/web", n.Name)
			}

			c.Change(n, "app", "2")
			c.RolledTo(map[*nt.Space]int64{n: 1})
			line := "updated 'web' of type 'Deployment' in namespace '" + n.Name + "'"
			c.G.Expect(strings.Count(a.Nudge.Logs()+both.Nudge.Logs(), line)).To(Equal(1), "one rollout logged, by either nudge")
		})
	}
}

// shardedCluster is one TestShards case: its namespaces and nudges, the
// shard label's values unique to the case.
type shardedCluster struct {
	*nt.Cluster
	id     string // makes the label values of the case unique
	system string // the shared system namespace, with sharedKey
}

func newShardedCluster(t *testing.T, sharedKey bool) *shardedCluster {
	c := &shardedCluster{Cluster: nt.NewCluster(t, suite.K8s), id: utilrand.String(6)}
	if sharedKey {
		c.system = c.newNamespace("shard-sys-")
	}
	return c
}

func (c *shardedCluster) newNamespace(prefix string) string {
	c.T.Helper()
	ns, err := suite.Plane.GenerateNamespace(c.Ctx, prefix)
	c.G.Expect(err).NotTo(HaveOccurred())
	return ns
}

// shard starts a nudge named name watching every namespace whose shard
// label is one of values (name alone when none is given), as the chart runs
// it (no --namespaces), keeping its key in its own system namespace or,
// with a shared key, in the shared one.
func (c *shardedCluster) shard(name string, values ...string) *nt.Member {
	c.T.Helper()
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
	return c.Start(name, suite.Plane.Config(), system, func(o *options.Options) {
		o.Namespaces = nil
		o.NamespaceSelector = shardLabel + " in (" + strings.Join(values, ",") + ")"
		o.LeaderElectionID = "nudge-" + name
	})
}

func (c *shardedCluster) value(shard string) string { return c.id + "-" + shard }

// namespace creates a namespace labelled for shard, with its ConfigMap and
// Deployment (see nt.Cluster.Space).
func (c *shardedCluster) namespace(shard string) *nt.Space {
	c.T.Helper()
	ns := c.newNamespace("shard-")
	c.label(ns, shard)
	return c.Space(ns, nil)
}

func (c *shardedCluster) relabel(n *nt.Space, shard string) { c.label(n.Name, shard) }

func (c *shardedCluster) label(ns, shard string) {
	c.T.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+shardLabel+`":"`+c.value(shard)+`"}}}`))
	c.G.Expect(suite.K8s.Patch(c.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch)).To(Succeed())
}

func (c *shardedCluster) deployment(n *nt.Space) *appsv1.Deployment {
	c.T.Helper()
	var d appsv1.Deployment
	c.G.Expect(suite.K8s.Get(c.Ctx, client.ObjectKey{Namespace: n.Name, Name: "web"}, &d)).To(Succeed())
	return &d
}

func (c *shardedCluster) applied(n *nt.Space) func() string {
	return func() string { return c.Applied(n, "web") }
}

func (c *shardedCluster) trigger(n *nt.Space) string {
	return c.deployment(n).Spec.Template.Annotations[workload.RestartedAtAnnotation]
}

// rolledBy checks that nudge m logged want rollouts of the Deployment of n.
func (c *shardedCluster) rolledBy(m *nt.Member, n *nt.Space, want int) {
	c.T.Helper()
	c.G.Expect(nt.RolledBy(m, n)).To(Equal(want), "rollouts of %s/web logged by the nudge of shard %s", n.Name, m.Name)
}

// writes returns a count, from a watch, of the writes of the Deployment of
// n (its creation included).
func (c *shardedCluster) writes(n *nt.Space) func() int64 {
	c.T.Helper()
	events := nt.Watch(c.T, suite.K8s, &appsv1.DeploymentList{}, client.InNamespace(n.Name))
	var count atomic.Int64
	go func() {
		for range events {
			count.Add(1)
		}
	}()
	return count.Load
}

// events returns the Events about the Deployment of n with reason.
func (c *shardedCluster) events(n *nt.Space, reason string) func() []eventsv1.Event {
	return (&nt.Env{T: c.T, G: c.G, Ctx: c.Ctx, NS: n.Name, K8s: suite.K8s}).Events("web", reason)
}
