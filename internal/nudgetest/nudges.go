package nudgetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// Cluster is one test of several nudges on one plane, each owning some of
// the test's namespaces (shards, or releases split by
// --namespace-selector): its namespaces (Space), its nudges (Member), and
// the waits that say who baselined and rolled what.
type Cluster struct {
	T   *testing.T
	G   *gomega.WithT
	Ctx context.Context
	// K8s is the test's client of the plane.
	K8s client.WithWatch
}

// Member is one running nudge of a Cluster: its name and its key's ID.
type Member struct {
	Name  string
	KeyID string
	Nudge *Nudge
}

// Space is a namespace of a Cluster, with a ConfigMap "app" and a
// Deployment "web" that reads it in auto mode.
type Space struct {
	Name string
	// Templates counts, from a watch, the pod-template changes of the
	// namespace's Deployments.
	Templates *TemplateWrites
}

// Rollouts returns how many times Deployment "web" was rolled.
func (s *Space) Rollouts() int64 { return s.Templates.Count("web") }

// NewCluster returns t's Cluster on the plane k8s is a client of.
func NewCluster(t *testing.T, k8s client.WithWatch) *Cluster {
	return &Cluster{T: t, G: gomega.NewWithT(t), Ctx: t.Context(), K8s: k8s}
}

// Start starts nudge name in-process on cfg, its key in namespace system,
// with mutate applied to its options, and waits up to 20 s for its key.
func (c *Cluster) Start(name string, cfg *rest.Config, system string, mutate func(*options.Options)) *Member {
	c.T.Helper()
	m := &Member{Name: name, Nudge: Start(c.T, cfg, system, mutate)}
	c.G.Eventually(func() error {
		k, err := fingerprint.ReadKey(c.Ctx, c.K8s, system, options.Default().KeySecret)
		m.KeyID = k.ID()
		return err
	}).WithTimeout(20*time.Second).Should(gomega.Succeed(), "nudge %s to create its key", name)
	return m
}

// Space creates, in namespace ns, the ConfigMap "app" (v=1) and the
// Deployment "web" reading it with nudge.dev/auto and annotations, and
// starts counting the Deployment's rollouts.
func (c *Cluster) Space(ns string, annotations map[string]string) *Space {
	c.T.Helper()
	n := &Space{Name: ns, Templates: WatchTemplates(c.T, c.K8s, ns)}
	a := map[string]string{"nudge.dev/auto": "true"}
	for k, v := range annotations {
		a[k] = v
	}
	c.Create(ConfigMap(ns, "app", map[string]string{"v": "1"}),
		Deployment(ns, "web", 1, a, EnvFrom("ConfigMap", "app")))
	return n
}

// Create creates objs, failing the test on an error.
func (c *Cluster) Create(objs ...client.Object) {
	c.T.Helper()
	for _, o := range objs {
		c.G.Expect(c.K8s.Create(c.Ctx, o)).To(gomega.Succeed(), "creating %T %s", o, o.GetName())
	}
}

// Change sets key "v" of ConfigMap name in n to v.
func (c *Cluster) Change(n *Space, name, v string) {
	c.T.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"`+v+`"}}`))
	c.G.Expect(c.K8s.Patch(c.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n.Name, Name: name}}, patch)).To(gomega.Succeed())
}

// Applied returns the applied state of Deployment name in n, "" when it
// has none or cannot be read.
func (c *Cluster) Applied(n *Space, name string) string {
	var d appsv1.Deployment
	if err := c.K8s.Get(c.Ctx, client.ObjectKey{Namespace: n.Name, Name: name}, &d); err != nil {
		return ""
	}
	return d.Annotations[workload.AppliedAnnotation]
}

// OwnedBy waits up to 30 s until each Deployment "web" holds a state
// written with the key of its owner, then checks for 3 s that each keeps
// it: no other nudge takes it.
func (c *Cluster) OwnedBy(owners map[*Space]*Member) {
	c.T.Helper()
	keys := func() map[string]string {
		out := map[string]string{}
		for n := range owners {
			id, _, _ := strings.Cut(strings.TrimPrefix(c.Applied(n, "web"), "v1."), " ")
			out[n.Name] = id
		}
		return out
	}
	want := map[string]string{}
	for n, m := range owners {
		want[n.Name] = m.KeyID
	}
	c.G.Eventually(keys).WithTimeout(30*time.Second).Should(gomega.Equal(want),
		"each Deployment baselined with the key of its owner (namespace: key ID)")
	c.G.Consistently(keys).WithTimeout(3*time.Second).Should(gomega.Equal(want),
		"each Deployment to stay with the key of its owner (namespace: key ID)")
}

// RolledTo waits up to 30 s until each Deployment "web" has had the
// rollouts wanted, then checks for 3 s that no further one follows.
func (c *Cluster) RolledTo(want map[*Space]int64) {
	c.T.Helper()
	counts := func() map[string]int64 {
		out := map[string]int64{}
		for n := range want {
			out[n.Name] = n.Rollouts()
		}
		return out
	}
	w := map[string]int64{}
	for n, k := range want {
		w[n.Name] = k
	}
	c.G.Eventually(counts).WithTimeout(30*time.Second).Should(gomega.Equal(w), "the rollouts of each Deployment (namespace: rollouts)")
	c.G.Consistently(counts).WithTimeout(3*time.Second).Should(gomega.Equal(w), "no further rollout (namespace: rollouts)")
}

// RolledBy returns how many rollouts of n's Deployment "web" m logged.
func RolledBy(m *Member, n *Space) int {
	return strings.Count(m.Nudge.Logs(), "updated 'web' of type 'Deployment' in namespace '"+n.Name+"'")
}
