package controller_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"nudge.dev/nudge/internal/alert"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// hook is a local webhook endpoint that keeps every body it receives.
type hook struct {
	mu     sync.Mutex
	bodies []string
	url    string
}

func newHook(t *testing.T) *hook {
	h := &hook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hooks/T000/B000/XXXX"
	return h
}

func (h *hook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

// --webhook-url: each change is POSTed instead of rolled.
func TestWebhookURLInsteadOfRollout(t *testing.T) {
	h := newHook(t)
	e := setup(t, true, func(o *options.Options) { o.WebhookURL = h.url; o.RolloutWindow = 0 })
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.baselined("web")
	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.g.Eventually(h.received).WithTimeout(10*time.Second).Should(HaveLen(1), "one POST for the change")
	var got map[string]any
	e.g.Expect(json.Unmarshal([]byte(h.received()[0]), &got)).To(Succeed())
	e.g.Expect(got).To(HaveKeyWithValue("name", "web"))
	e.g.Expect(got).To(HaveKeyWithValue("sources", ConsistOf("ConfigMap "+e.ns+"/app")))
	e.rolledTo("web", 0)
	e.g.Expect(h.received()).To(HaveLen(1), "sent once")
}

// Reloader's alerts: a Slack message for each rollout.
func TestAlertOnReload(t *testing.T) {
	h := newHook(t)
	e := setup(t, true, func(o *options.Options) {
		o.RolloutWindow = 0
		o.Alert = alert.Config{Enabled: true, Sink: alert.SinkSlack, WebhookURL: h.url, AdditionalInfo: "cluster blue"}
	})
	e.create(nt.Secret(e.ns, "db", map[string]string{"password": "p1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.Volume("Secret", "db")))
	e.baselined("web")
	// Upper case cannot occur in the generated namespace's name, which the
	// message does carry.
	const value = "S3CR3T-V2"
	e.updateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte(value) })
	e.rolledTo("web", 1)
	e.g.Eventually(h.received).WithTimeout(10*time.Second).Should(ConsistOf(
		And(ContainSubstring(`"attachments"`), ContainSubstring("web"), ContainSubstring("Secret "+e.ns+"/db"), ContainSubstring("cluster blue"),
			Not(ContainSubstring(value)))), "one Slack message naming the workload and the Secret, not its value")
}
