package shard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/shard"
)

// runLabel is the namespace label that keeps each test's nudges to its own
// namespaces (--namespace-selector): tests share a plane and every nudge
// here watches the whole cluster, as the chart runs it.
const runLabel = "nudge.dev/test-run"

// cluster is one test on one plane: its namespaces, its nudges and what
// they were sent.
type cluster struct {
	*nt.Cluster
	pl  *plane
	run string // the runLabel value of the test's namespaces
	// system is the namespace of the nudges' key when they share one
	// ("" gives each nudge a system namespace, so a key, of its own).
	system string
}

// member is one running shard.
type member struct {
	*nt.Member
	s    shard.Shard
	sent *recorder
}

func newCluster(t *testing.T, pl *plane, sharedKey bool) *cluster {
	c := &cluster{Cluster: nt.NewCluster(t, pl.k8s), pl: pl, run: utilrand.String(8)}
	if sharedKey {
		c.system = c.namespaceNamed("shard-sys-"+utilrand.String(5), false)
	}
	return c
}

// namespaceNamed creates namespace name, labelled for the test's nudges
// when selected, and deletes it when the test ends.
func (c *cluster) namespaceNamed(name string, selected bool) string {
	c.T.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if selected {
		ns.Labels = map[string]string{runLabel: c.run}
	}
	c.G.Expect(c.K8s.Create(c.Ctx, ns)).To(Succeed())
	c.T.Cleanup(func() { _ = c.K8s.Delete(context.Background(), ns) })
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

// space creates a namespace owned by s, with its ConfigMap and Deployment
// (see nt.Cluster.Space).
func (c *cluster) space(s shard.Shard, annotations map[string]string) *nt.Space {
	c.T.Helper()
	return c.Space(c.namespaceNamed(nameIn(s), true), annotations)
}

// baselinedBy waits until each Deployment "web" is baselined with its
// owner's key, and checks for 3 s that no other key takes it.
func (c *cluster) baselinedBy(owners map[*nt.Space]*member) {
	c.T.Helper()
	of := map[*nt.Space]*nt.Member{}
	for n, m := range owners {
		of[n] = m.Member
	}
	c.OwnedBy(of)
}

// start starts the nudge of shard s ("i/N"), watching every namespace of
// the test, JSON on the wire so that the test can read what it was sent.
func (c *cluster) start(name string) *member {
	c.T.Helper()
	s, err := shard.Parse(name)
	c.G.Expect(err).NotTo(HaveOccurred())
	system := c.system
	if system == "" {
		system = c.namespaceNamed("shard-sys-"+utilrand.String(5), false)
	}
	m := &member{s: s, sent: &recorder{}}
	cfg := rest.CopyConfig(c.pl.p.Config())
	cfg.ContentType = "application/json"
	cfg.Wrap(m.sent.wrap)
	m.Member = c.Start(name, cfg, system, func(o *options.Options) {
		o.Namespaces = nil
		o.NamespaceSelector = runLabel + "=" + c.run
		o.Shard = name
		o.RolloutWindow = 0
	})
	return m
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
