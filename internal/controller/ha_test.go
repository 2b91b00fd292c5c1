package controller_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/controller"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
)

// With leader election, every replica becomes ready once its caches are
// synced (a Deployment of nudge must be able to roll), one holds the Lease,
// and a change rolls once.
func TestLeaderElectionEveryReplicaReady(t *testing.T) {
	e := setup(t, false, nil)
	ports, err := testbed.FreePorts(2)
	e.G.Expect(err).NotTo(HaveOccurred())
	for _, port := range ports {
		nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
			o.LeaderElect = true
			o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", port)
			o.RolloutWindow = 0
		})
	}
	for _, port := range ports {
		e.G.Eventually(readyz(port)).WithTimeout(20*time.Second).Should(Equal(http.StatusOK), "replica on port %d ready", port)
	}
	e.G.Eventually(leaseHolder(e)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a leader")

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

// readyz returns a function reading the status of the readiness probe on
// port, 0 when it does not answer.
func readyz(port int) func() int {
	return func() int {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// leaseHolder returns a function reading who holds the leader election's
// Lease in e's namespace, "" when none does.
func leaseHolder(e *env) func() string {
	return func() string {
		var l coordinationv1.Lease
		if err := suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: options.Default().LeaderElectionID}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
}

// A replica standing by is fed the workloads' events, and one that comes
// to lead knows what the leader before it wrote (memo.Births): a required
// ConfigMap deleted just after its Deployment's creation, the leader's
// baseline of it seen by the standby, then the leader gone and nudge's
// state wiped by a GitOps replace. The new leader's first sight is of a
// wiped state, not of the creation: it does not record the deleted
// ConfigMap's content, and the ConfigMap's return with other content is
// what the new pods start with, not a rollout. The standby took its own
// memory of the creation for the creation's first sight, and rolled.
func TestStandbyKnowsTheLeadersBaseline(t *testing.T) {
	e := setup(t, false, nil)
	ports, err := testbed.FreePorts(2)
	e.G.Expect(err).NotTo(HaveOccurred())
	replica := func(port int) *nt.Nudge {
		return nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
			o.LeaderElect, o.RolloutWindow = true, 0
			o.Reloader.ReleaseOnCancel, o.Reloader.RetryPeriod = true, time.Second
			o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", port)
		})
	}
	leader := replica(ports[0])
	e.G.Eventually(leaseHolder(e)).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a leader")
	first := leaseHolder(e)()
	replica(ports[1])
	e.G.Eventually(readyz(ports[1])).WithTimeout(20*time.Second).Should(Equal(http.StatusOK), "the standby's caches synced")

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.G.Expect(e.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "app", nil))).To(Succeed())
	leader.Stop(t)
	e.G.Eventually(leaseHolder(e)).WithTimeout(20*time.Second).ShouldNot(Or(BeEmpty(), Equal(first)), "the standby leads")

	web := e.Deployment("web")
	web.Annotations, web.Labels = maps.Clone(auto), nil // the repository's manifest
	e.G.Expect(e.K8s.Update(e.Ctx, web)).To(Succeed())
	e.Baselined("web")
	e.G.Expect(e.Deployment("web").Annotations[workload.AppliedAnnotation]).NotTo(ContainSubstring("ConfigMap/app"),
		"the first sight of the wiped state records no ConfigMap app, missing")
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "2"}))
	e.G.Eventually(e.applied("web")).WithTimeout(20*time.Second).Should(ContainSubstring("ConfigMap/app"), "the ConfigMap back, recorded")
	e.RolledTo("web", 0)
}

// Two nudges over one namespace (a shard and its successor while a set is
// resharded, a leader and the old process of a restart), one of whose
// ConfigMap cache runs 2 s behind the API server once synced: each change
// is rolled once. The one behind sees the other's rollout before the change
// and must not write the state of its older ConfigMap back (a second
// rollout), which the other would then roll forward again (a third).
func TestTwoWritersOneBehindRollOnce(t *testing.T) {
	e := setup(t, false, nil)
	ports, err := testbed.FreePorts(1)
	e.G.Expect(err).NotTo(HaveOccurred())
	nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
	lag := &laggingWatches{kind: "configmaps", lag: 2 * time.Second}
	behind := rest.CopyConfig(suite.Plane.Config())
	behind.Wrap(lag.wrap)
	nt.Start(t, behind, e.NS, func(o *options.Options) {
		o.RolloutWindow = 0
		o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	})
	e.G.Eventually(readyz(ports[0])).WithTimeout(20*time.Second).Should(Equal(http.StatusOK), "the nudge behind synced")

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	lag.on.Store(true)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	e.RolledTo("web", 2)
}

// A nudge started in place of another (a restart, a new leader) finds the
// rollouts of the last minute another's, and asks the API server whether
// its cache is behind before it rolls such a workload again: once per
// changed source, not once per workload. A fan-out right after a restart
// asked once per workload and took twice as long.
func TestRestartAsksOncePerSource(t *testing.T) {
	e := setup(t, false, nil)
	const n = 60
	window0 := func(o *options.Options) { o.RolloutWindow = 0 }
	first := nt.Start(t, suite.Plane.Config(), e.NS, window0)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("web-%02d", i)
		e.Create(nt.Deployment(e.NS, names[i], 1, auto, nt.EnvFrom("ConfigMap", "app")))
	}
	for _, name := range names {
		e.Baselined(name)
	}
	rolled := func(want int64) {
		t.Helper()
		e.G.Eventually(func() []string {
			var short []string
			for _, name := range names {
				if e.Rollouts(name)() < want {
					short = append(short, name)
				}
			}
			return short
		}).WithTimeout(30*time.Second).Should(BeEmpty(), "every Deployment rolled %d time(s)", want)
	}
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	rolled(1)
	firstRolled := time.Now()
	first.Stop(t)

	var lists atomic.Int64
	counting := rest.CopyConfig(suite.Plane.Config())
	counting.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			q := req.URL.Query()
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps") && q.Get("watch") != "true" && q.Get("fieldSelector") != "" {
				lists.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	nt.Start(t, counting, e.NS, window0)
	// A check covers only the rollouts stamped ClockSkew or more before it:
	// the change comes once the first nudge's are that old (a wait for a
	// time, not for a condition).
	time.Sleep(time.Until(firstRolled.Add(controller.ClockSkew)))
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	rolled(2)
	e.G.Consistently(func() []int64 {
		var counts []int64
		for _, name := range names {
			counts = append(counts, e.Rollouts(name)())
		}
		return slices.Compact(counts)
	}).WithTimeout(3*time.Second).Should(Equal([]int64{2}), "every Deployment rolled once per change")
	workers := int64(options.Default().Workers)
	e.G.Expect(lists.Load()).To(And(BeNumerically(">=", 1), BeNumerically("<=", workers)),
		"lists of the ConfigMap by name, at most one per worker running at once (not one per each of the %d Deployments)", n)
}

// laggingWatches is a rest.Config.WrapTransport whose watches of kind
// (a resource: "configmaps"), once on, hand on what they receive lag after
// receiving it: the cache of that kind runs that far behind the API server,
// as a loaded nudge's may.
type laggingWatches struct {
	kind string
	lag  time.Duration
	on   atomic.Bool
}

func (l *laggingWatches) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/"+l.kind) {
			resp.Body = newLaggingBody(resp.Body, l)
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// laggingBody is a delay line: a goroutine reads body as it comes, and Read
// hands each piece on lag after it came, while its watches are on.
type laggingBody struct {
	body    io.ReadCloser
	watches *laggingWatches
	pieces  chan piece
	rest    []byte
	err     error
}

type piece struct {
	b    []byte
	came time.Time
	err  error
}

func newLaggingBody(body io.ReadCloser, w *laggingWatches) *laggingBody {
	l := &laggingBody{body: body, watches: w, pieces: make(chan piece, 1024)}
	go func() {
		defer close(l.pieces)
		for {
			b := make([]byte, 32<<10)
			n, err := body.Read(b)
			l.pieces <- piece{b: b[:n], came: time.Now(), err: err}
			if err != nil {
				return
			}
		}
	}()
	return l
}

func (l *laggingBody) Read(p []byte) (int, error) {
	for len(l.rest) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		next, ok := <-l.pieces
		if !ok {
			return 0, io.EOF
		}
		if l.watches.on.Load() {
			time.Sleep(time.Until(next.came.Add(l.watches.lag))) // the lag itself, not a wait for a condition
		}
		l.rest, l.err = next.b, next.err
	}
	n := copy(p, l.rest)
	l.rest = l.rest[n:]
	return n, nil
}

func (l *laggingBody) Close() error { return l.body.Close() }
