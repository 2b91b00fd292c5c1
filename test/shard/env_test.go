package shard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/app"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/shard"
	"nudge.dev/nudge/internal/workload"
)

// runLabel is the namespace label that keeps each test's nudges to its own
// namespaces (--namespace-selector): tests share a plane and every nudge
// here watches the whole cluster, as the chart runs it.
const runLabel = "nudge.dev/test-run"

// cluster is one test on one plane: its namespaces, its nudges and what
// they were sent.
type cluster struct {
	t   *testing.T
	g   *WithT
	ctx context.Context
	pl  *plane
	run string // the runLabel value of the test's namespaces
	// system is the namespace of the nudges' key when they share one
	// ("" gives each nudge a system namespace, so a key, of its own).
	system string
}

// member is one running shard.
type member struct {
	s     shard.Shard
	nudge *nt.Nudge
	keyID string
	sent  *recorder
}

// space is a namespace of the test, with a ConfigMap "app" and a
// Deployment "web" that reads it in auto mode.
type space struct {
	name      string
	templates *nt.TemplateWrites
}

func (n *space) rollouts() int64 { return n.templates.Count("web") }

func newCluster(t *testing.T, pl *plane, sharedKey bool) *cluster {
	c := &cluster{t: t, g: NewWithT(t), ctx: t.Context(), pl: pl, run: utilrand.String(8)}
	if sharedKey {
		c.system = c.namespaceNamed("shard-sys-"+utilrand.String(5), false)
	}
	return c
}

// namespaceNamed creates namespace name, labelled for the test's nudges
// when selected, and deletes it when the test ends.
func (c *cluster) namespaceNamed(name string, selected bool) string {
	c.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if selected {
		ns.Labels = map[string]string{runLabel: c.run}
	}
	c.g.Expect(c.pl.k8s.Create(c.ctx, ns)).To(Succeed())
	c.t.Cleanup(func() { _ = c.pl.k8s.Delete(context.Background(), ns) })
	return name
}

// nameIn returns a new namespace name that s owns.
func nameIn(s shard.Shard) string {
	for {
		if name := "shard-" + utilrand.String(5); s.Owns(name) {
			return name
		}
	}
}

// space creates a namespace owned by s, with its ConfigMap and Deployment,
// and starts counting the Deployment's rollouts.
func (c *cluster) space(s shard.Shard, annotations map[string]string) *space {
	c.t.Helper()
	n := &space{name: c.namespaceNamed(nameIn(s), true)}
	n.templates = nt.WatchTemplates(c.t, c.pl.k8s, n.name)
	a := map[string]string{"nudge.dev/auto": "true"}
	for k, v := range annotations {
		a[k] = v
	}
	c.create(nt.ConfigMap(n.name, "app", map[string]string{"v": "1"}),
		nt.Deployment(n.name, "web", 1, a, nt.EnvFrom("ConfigMap", "app")))
	return n
}

func (c *cluster) create(objs ...client.Object) {
	c.t.Helper()
	for _, o := range objs {
		c.g.Expect(c.pl.k8s.Create(c.ctx, o)).To(Succeed())
	}
}

// start starts the nudge of shard s ("i/N"), watching every namespace of
// the test, JSON on the wire so that the test can read what it was sent.
func (c *cluster) start(name string) *member {
	c.t.Helper()
	s, err := shard.Parse(name)
	c.g.Expect(err).NotTo(HaveOccurred())
	system := c.system
	if system == "" {
		system = c.namespaceNamed("shard-sys-"+utilrand.String(5), false)
	}
	m := &member{s: s, sent: &recorder{}}
	cfg := rest.CopyConfig(c.pl.p.Config())
	cfg.ContentType = "application/json"
	cfg.Wrap(m.sent.wrap)
	m.nudge = nt.Start(c.t, cfg, system, func(o *options.Options) {
		o.Namespaces = nil
		o.NamespaceSelector = runLabel + "=" + c.run
		o.Shard = name
		o.RolloutWindow = 0
	})
	c.g.Eventually(func() error {
		k, err := app.ReadKey(c.ctx, c.pl.k8s, system, options.Default().KeySecret)
		m.keyID = k.ID()
		return err
	}).WithTimeout(20*time.Second).Should(Succeed(), "nudge %s to create its key", name)
	return m
}

func (c *cluster) change(n *space, name, v string) {
	c.t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"`+v+`"}}`))
	c.g.Expect(c.pl.k8s.Patch(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n.name, Name: name}}, patch)).To(Succeed())
}

func (c *cluster) applied(n *space, name string) string {
	var d appsv1.Deployment
	if err := c.pl.k8s.Get(c.ctx, client.ObjectKey{Namespace: n.name, Name: name}, &d); err != nil {
		return ""
	}
	return d.Annotations[workload.AppliedAnnotation]
}

// baselinedBy waits until each Deployment "web" is baselined with its
// owner's key, and checks for 3 s that no other key takes it.
func (c *cluster) baselinedBy(owners map[*space]*member) {
	c.t.Helper()
	keys := func() map[string]string {
		out := map[string]string{}
		for n := range owners {
			id, _, _ := strings.Cut(strings.TrimPrefix(c.applied(n, "web"), "v1."), " ")
			out[n.name] = id
		}
		return out
	}
	want := map[string]string{}
	for n, m := range owners {
		want[n.name] = m.keyID
	}
	c.g.Eventually(keys).WithTimeout(30*time.Second).Should(Equal(want), "each Deployment baselined with the key of its shard (namespace: key ID)")
	c.g.Consistently(keys).WithTimeout(3*time.Second).Should(Equal(want), "each Deployment to stay with the key of its shard")
}

// rolledTo waits until each namespace's Deployment has had the rollouts
// wanted, then checks for 3 s that no further one follows.
func (c *cluster) rolledTo(want map[*space]int64) {
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
	c.g.Eventually(counts).WithTimeout(30*time.Second).Should(Equal(w), "the rollouts of each Deployment (namespace: rollouts)")
	c.g.Consistently(counts).WithTimeout(3*time.Second).Should(Equal(w), "no further rollout (namespace: rollouts)")
}

// rolledBy returns how many rollouts of n's Deployment m logged.
func rolledBy(m *member, n *space) int {
	return strings.Count(m.nudge.Logs(), "updated 'web' of type 'Deployment' in namespace '"+n.name+"'")
}

// recorder keeps the URLs of the GET requests a nudge sent and, for its
// cluster-wide lists and watches, the namespaces of the objects it was sent
// in answer, read from the JSON on the wire, and their bytes.
type recorder struct {
	mu         sync.Mutex
	requests   []string
	namespaces map[string]int
	bytes      int64
}

// wrap is a rest.Config.WrapTransport.
func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.Method != http.MethodGet {
			return resp, err
		}
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.String())
		r.mu.Unlock()
		if !clusterWideCollection(req.URL.Path) {
			return resp, err
		}
		pr, pw := io.Pipe()
		go r.read(pr)
		resp.Body = &teeBody{ReadCloser: resp.Body, w: pw, r: r}
		return resp, nil
	})
}

// clusterWideCollection reports whether path is a collection of a
// namespaced resource across every namespace: /api/v1/configmaps,
// /apis/apps/v1/deployments (not /api/v1/namespaces, nor one namespace's).
func clusterWideCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "api":
		return parts[2] != "namespaces"
	case len(parts) == 4 && parts[0] == "apis":
		return parts[1] != "apiextensions.k8s.io" && parts[1] != "apiregistration.k8s.io"
	}
	return false
}

// read decodes a list or a stream of watch events and counts their
// objects' namespaces.
func (r *recorder) read(body io.ReadCloser) {
	defer body.Close()
	type object struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	dec := json.NewDecoder(body)
	for {
		var frame struct {
			Type   string   `json:"type"`
			Object object   `json:"object"`
			Items  []object `json:"items"`
		}
		if err := dec.Decode(&frame); err != nil {
			_, _ = io.Copy(io.Discard, body)
			return
		}
		r.mu.Lock()
		if r.namespaces == nil {
			r.namespaces = map[string]int{}
		}
		if frame.Type != "" && frame.Type != "BOOKMARK" && frame.Type != "ERROR" {
			r.namespaces[frame.Object.Metadata.Namespace]++
		}
		for _, o := range frame.Items {
			r.namespaces[o.Metadata.Namespace]++
		}
		r.mu.Unlock()
	}
}

// sentFrom returns the namespaces the nudge was sent objects of, with
// how many.
func (r *recorder) sentFrom() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.namespaces {
		out[k] = v
	}
	return out
}

func (r *recorder) urls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// teeBody copies what the client reads of a response into w.
type teeBody struct {
	io.ReadCloser
	w *io.PipeWriter
	r *recorder
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.r.mu.Lock()
		b.r.bytes += int64(n)
		b.r.mu.Unlock()
		_, _ = b.w.Write(p[:n])
	}
	if err != nil {
		b.w.CloseWithError(err)
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.w.CloseWithError(io.ErrClosedPipe)
	return b.ReadCloser.Close()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
