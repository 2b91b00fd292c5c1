package controller_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// writes records the API writes (every method but GET) of one nudge by the
// reconcile phase their request's context is of.
type writes struct {
	mu      sync.Mutex
	byPhase map[string][]string
}

func (w *writes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			w.mu.Lock()
			p := controller.PhaseOf(req.Context())
			w.byPhase[p] = append(w.byPhase[p], req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (w *writes) of(p string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byPhase[p]...)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestWritesOnlyInAct: every API write a reconcile makes is made in act
// (observe reads, decide is pure, record only records), read from the
// requests nudge sends: a first sight's baseline, a rollout with the waves'
// marks (--max-concurrent-rollouts), a rollout deferred to a maintenance
// window (nudge.dev/held), an opt-out's release and an opt-in again.
// Writes outside a reconcile (Events, the leader's Lease) carry no phase.
func TestWritesOnlyInAct(t *testing.T) {
	e := setup(t, false, nil)
	w := &writes{byPhase: map[string][]string{}}
	cfg := rest.CopyConfig(suite.Plane.Config())
	cfg.Wrap(w.wrap)
	e.Nudge = nt.Start(t, cfg, e.NS, func(o *options.Options) { o.MaxConcurrentRollouts = 2 })

	newYear := map[string]string{"nudge.dev/auto": "true", dialect.NudgeMaintenanceWindow: "0 0 1 1 * 1m"} // closed today
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "night", 1, newYear, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.Baselined("night")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.G.Expect(e.Deployment("web").Annotations).To(HaveKey(fleet.RolledForAnnotation), "the waves' mark, in the rollout's patch")
	e.G.Eventually(func() map[string]string { return e.Deployment("night").Annotations }).WithTimeout(20*time.Second).
		Should(HaveKey(workload.HeldAnnotation), "the deferred change recorded")
	e.Annotate("web", `{"nudge.dev/auto":null}`)
	e.G.Eventually(func() map[string]string { return e.Deployment("web").Annotations }).WithTimeout(20*time.Second).
		ShouldNot(HaveKey("nudge.dev/applied-fingerprint"), "the opt-out's release of nudge's state")
	e.Annotate("web", `{"nudge.dev/auto":"true"}`)
	e.Baselined("web")

	e.G.Expect(w.of("act")).To(ContainElement(HavePrefix("PATCH ")), "the writes of act carry its phase")
	for _, p := range []string{"observe", "record"} {
		e.G.Expect(w.of(p)).To(BeEmpty(), "API writes made in %s", p)
	}
}
