package controller_test

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
)

// wire records the media types of every request a client sends and of
// every successful answer it receives, by API group and verb. An error's
// answer is a Status, written in JSON for a custom resource whatever the
// request asked (a 409 Conflict of a PATCH, say): it counts in failed.
type wire struct {
	mu     sync.Mutex
	calls  map[call]int
	failed map[string]int
}

// call is one kind of request: its API group (see group), its verb (WATCH
// for a watch), the media type of its body and of its answer ("-": none).
type call struct{ group, verb, request, answer string }

func (c call) String() string {
	return fmt.Sprintf("%s %s (body %s, answer %s)", c.group, c.verb, c.request, c.answer)
}

// wrap returns next, recording each request that has an answer in w.
func (w *wire) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		verb := req.Method
		if req.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		c := call{group(req.URL.Path), verb, mediaType(req.Header.Get("Content-Type")), mediaType(resp.Header.Get("Content-Type"))}
		w.mu.Lock()
		defer w.mu.Unlock()
		if resp.StatusCode >= 300 {
			w.failed[fmt.Sprintf("%s: %d", c, resp.StatusCode)]++
			return resp, nil
		}
		w.calls[c]++
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// group returns the API group of an API path ("core" for /api/v1), or the
// path itself for discovery and anything else.
func group(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		return "core"
	case len(parts) >= 4 && parts[0] == "apis":
		return parts[1]
	}
	return path
}

func mediaType(header string) string {
	if header == "" {
		return "-"
	}
	t, _, err := mime.ParseMediaType(header)
	if err != nil {
		return header
	}
	return t
}

// builtin are the API groups of the built-in kinds nudge reads and writes
// in this test, "core" for the legacy group.
var builtin = map[string]bool{"core": true, "apps": true, "batch": true, "events.k8s.io": true, "coordination.k8s.io": true}

// TestWireFormats: nudge lists, watches, reads and writes the built-in
// kinds in protobuf, its Events and Lease included, and custom resources (here Argo
// Rollouts) in JSON, the only format the API server serves them in besides
// CBOR; a write's answer, its metadata alone, is protobuf for both.
func TestWireFormats(t *testing.T) {
	e := setup(t, false, nil)
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	w := &wire{calls: map[call]int{}, failed: map[string]int{}}
	cfg := suite.Plane.Config()
	cfg.Wrap(w.wrap)
	e.Nudge = nt.Start(t, cfg, e.NS, func(o *options.Options) { o.RolloutWindow, o.LeaderElect = 0, true })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Secret(e.NS, "creds", map[string]string{"p": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("Secret", "creds")),
		nt.Rollout(e.NS, "canary", auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.changeData("ConfigMap/app")
	e.RolledTo("web", 1)
	e.G.Eventually(e.Events("web", record.ReasonRolled)).WithTimeout(10*time.Second).Should(HaveLen(1), "the rollout's Event")
	e.G.Eventually(e.Events("canary", record.ReasonRolled)).WithTimeout(10*time.Second).Should(HaveLen(1), "the Rollout's Event")

	const pb, patch = runtime.ContentTypeProtobuf, "application/merge-patch+json"
	seen := map[string]bool{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.calls {
		seen[c.group+" "+c.verb] = true
		switch {
		case builtin[c.group]:
			e.G.Expect(c.answer).To(Equal(pb), "the answer of %s", c)
			e.G.Expect(c.request).To(BeElementOf("-", pb, patch), "the body of %s", c)
		case c.group == "argoproj.io" && c.verb == "WATCH":
			e.G.Expect(c.answer).To(Equal(runtime.ContentTypeJSON), "%s: a custom resource", c)
		case c.group == "argoproj.io" && c.verb == "PATCH":
			e.G.Expect(c.answer).To(Equal(pb), "%s: the metadata of a custom resource", c)
		}
	}
	e.G.Expect(seen).To(HaveKey("events.k8s.io POST"), "Events written")
	e.G.Expect(seen).To(HaveKey("coordination.k8s.io POST"), "the Lease taken")
	e.G.Expect(seen).To(HaveKey("apps PATCH"), "Deployments written")
	e.G.Expect(seen).To(HaveKey("core WATCH"), "sources watched")
	e.G.Expect(seen).To(HaveKey("argoproj.io WATCH"), "Rollouts watched")
	e.G.Expect(seen).To(HaveKey("argoproj.io PATCH"), "Rollouts written")
	if len(w.failed) > 0 {
		t.Logf("answers with an error, not checked: %v", w.failed)
	}
}
