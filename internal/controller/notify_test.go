package controller_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"nudge.dev/nudge/internal/alert"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// --webhook-url: each change is POSTed instead of rolled.
func TestWebhookURLInsteadOfRollout(t *testing.T) {
	h := nt.NewHook(t)
	e := setup(t, true, func(o *options.Options) { o.WebhookURL = h.URL; o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(h.Received).WithTimeout(10*time.Second).Should(HaveLen(1), "one POST for the change")
	var got map[string]any
	e.G.Expect(json.Unmarshal([]byte(h.Received()[0]), &got)).To(Succeed())
	e.G.Expect(got).To(HaveKeyWithValue("name", "web"))
	e.G.Expect(got).To(HaveKeyWithValue("sources", ConsistOf("ConfigMap "+e.NS+"/app")))
	e.RolledTo("web", 0)
	e.G.Expect(h.Received()).To(HaveLen(1), "sent once")
}

// Reloader's alerts: a Slack message for each rollout.
func TestAlertOnReload(t *testing.T) {
	h := nt.NewHook(t)
	e := setup(t, true, func(o *options.Options) {
		o.RolloutWindow = 0
		o.Alert = alert.Config{Enabled: true, Sink: alert.SinkSlack, WebhookURL: h.URL, AdditionalInfo: "cluster blue"}
	})
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.Volume("Secret", "db")))
	e.Baselined("web")
	// Upper case cannot occur in the generated namespace's name, which the
	// message does carry.
	const value = "S3CR3T-V2"
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte(value) })
	e.RolledTo("web", 1)
	e.G.Eventually(h.Received).WithTimeout(10*time.Second).Should(ConsistOf(
		And(ContainSubstring(`"attachments"`), ContainSubstring("web"), ContainSubstring("Secret "+e.NS+"/db"), ContainSubstring("cluster blue"),
			Not(ContainSubstring(value)))), "one Slack message naming the workload and the Secret, not its value")
}
