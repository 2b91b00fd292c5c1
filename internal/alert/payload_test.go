package alert

import (
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// TestSinkPayloads posts one alert through each sink to a local webhook and
// checks what the service would receive.
func TestSinkPayloads(t *testing.T) {
	const (
		bolded = "cluster: prod-eu : nudge detected changes in *ConfigMap shop/app*, *Secret shop/db*. " +
			"Hence reloaded *web* of type *Deployment* in namespace *shop*"
		plainText = "cluster: prod-eu : nudge detected changes in ConfigMap shop/app, Secret shop/db. " +
			"Hence reloaded web of type Deployment in namespace shop"
	)
	tests := map[string]struct {
		sink            Sink
		info            string
		wantContentType string
		// want is the decoded JSON body, or the text body for SinkRaw.
		want any
	}{
		"slack gets one green attachment in mrkdwn, as Reloader sends": {
			sink:            SinkSlack,
			info:            "cluster: prod-eu",
			wantContentType: "application/json",
			want: map[string]any{"attachments": []any{map[string]any{
				"color": "good", "author_name": "nudge", "text": bolded, "fallback": plainText,
				"mrkdwn_in": []any{"text"},
			}}},
		},
		"slack gets its control characters escaped": {
			sink:            SinkSlack,
			info:            "prod <eu> & co",
			wantContentType: "application/json",
			want: map[string]any{"attachments": []any{map[string]any{
				"color": "good", "author_name": "nudge",
				"text": "prod &lt;eu&gt; &amp; co : nudge detected changes in *ConfigMap shop/app*, *Secret shop/db*. " +
					"Hence reloaded *web* of type *Deployment* in namespace *shop*",
				"fallback": "prod <eu> & co : nudge detected changes in ConfigMap shop/app, Secret shop/db. " +
					"Hence reloaded web of type Deployment in namespace shop",
				"mrkdwn_in": []any{"text"},
			}}},
		},
		"teams gets the shortest MessageCard, a text": {
			sink:            SinkTeams,
			info:            "cluster: prod-eu",
			wantContentType: "application/json",
			want:            map[string]any{"text": bolded},
		},
		"google chat gets a text message": {
			sink:            SinkGChat,
			info:            "cluster: prod-eu",
			wantContentType: "application/json",
			want:            map[string]any{"text": bolded},
		},
		"raw gets the message as plain text without markup, as Reloader sends": {
			sink:            SinkRaw,
			info:            "cluster: prod-eu",
			wantContentType: "text/plain; charset=utf-8",
			want:            plainText,
		},
		"json gets Reloader's webhook field and the alert's fields": {
			sink:            SinkJSON,
			info:            "cluster: prod-eu",
			wantContentType: "application/json",
			want: map[string]any{
				"webhook": "update successful", "kind": "Deployment", "namespace": "shop", "name": "web",
				"sources": []any{"ConfigMap shop/app", "Secret shop/db"}, "time": "2026-11-22T10:00:00Z",
				"additionalInfo": "cluster: prod-eu",
			},
		},
		"json leaves out empty additional info": {
			sink:            SinkJSON,
			wantContentType: "application/json",
			want: map[string]any{
				"webhook": "update successful", "kind": "Deployment", "namespace": "shop", "name": "web",
				"sources": []any{"ConfigMap shop/app", "Secret shop/db"}, "time": "2026-11-22T10:00:00Z",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			hook := newWebhook(t, status(http.StatusOK))
			var logs logBuffer
			s := newTestSender(Config{Enabled: true, Sink: tc.sink, WebhookURL: hook.url(), AdditionalInfo: tc.info}, hook.srv.Client(), logs.logger())
			run(t, s)

			s.Send(webAlert())

			var got request
			g.Eventually(hook.requests).WithTimeout(wait).Should(Receive(&got), "waited for the webhook to receive the alert")
			g.Expect(got.method).To(Equal(http.MethodPost))
			g.Expect(got.path).To(Equal(secretPath))
			g.Expect(got.query).To(Equal("token=s3cr3t-query"))
			g.Expect(got.contentType).To(Equal(tc.wantContentType))
			if text, ok := tc.want.(string); ok {
				g.Expect(string(got.body)).To(Equal(text))
			} else {
				var body any
				g.Expect(json.Unmarshal(got.body, &body)).To(Succeed(), "body: %s", got.body)
				g.Expect(body).To(Equal(tc.want))
			}
			g.Eventually(s.Stats).WithTimeout(wait).Should(Equal(Stats{Sent: 1, Attempts: 1}))
			g.Expect(logs.String()).To(ContainSubstring("Sent alert"))
			g.Expect(logs.String()).NotTo(ContainSubstring("s3cr3t"))
		})
	}
}

func TestMessage(t *testing.T) {
	tests := map[string]struct {
		alert Alert
		info  string
		want  string
	}{
		"one source": {
			alert: Alert{Kind: "StatefulSet", Namespace: "db", Name: "pg", Sources: []string{"Secret db/creds"}},
			want:  "nudge detected changes in Secret db/creds. Hence reloaded pg of type StatefulSet in namespace db",
		},
		"no sources still names the workload": {
			alert: Alert{Kind: "DaemonSet", Namespace: "kube-system", Name: "agent"},
			want:  "nudge detected changes. Hence reloaded agent of type DaemonSet in namespace kube-system",
		},
		"additional info comes first, as in Reloader": {
			alert: Alert{Kind: "Deployment", Namespace: "shop", Name: "web", Sources: []string{"ConfigMap shop/app"}},
			info:  "staging",
			want:  "staging : nudge detected changes in ConfigMap shop/app. Hence reloaded web of type Deployment in namespace shop",
		},
		"a halt says it did not roll, and why": {
			alert: Alert{Kind: "Deployment", Namespace: "shop", Name: "web", Sources: []string{"ConfigMap shop/app"},
				Halted: "the rollout of Deployment shop/canary for the same change failed"},
			want: "nudge halted the rollout of web of type Deployment in namespace shop for changes in ConfigMap shop/app: " +
				"the rollout of Deployment shop/canary for the same change failed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(message(tc.alert, tc.info, plain, plain)).To(Equal(tc.want))
		})
	}
}

func TestJSONPayloadWithoutSourcesHasAnEmptyList(t *testing.T) {
	g := NewWithT(t)
	body, _, err := payload(SinkJSON, Alert{Kind: "Deployment", Namespace: "shop", Name: "web", Time: t0}, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(ContainSubstring(`"sources":[]`))
}

func TestHaltPayloads(t *testing.T) {
	g := NewWithT(t)
	a := Alert{Kind: "Deployment", Namespace: "shop", Name: "web", Sources: []string{"ConfigMap shop/app"}, Time: t0, Halted: "canary failed"}
	body, _, err := payload(SinkJSON, a, "")
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(body, &got)).To(Succeed())
	g.Expect(got).To(And(HaveKeyWithValue("webhook", "rollout halted"), HaveKeyWithValue("halted", "canary failed")))
	body, _, err = payload(SinkSlack, a, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(And(ContainSubstring(`"color":"danger"`), ContainSubstring("halted the rollout of *web*")))
}

// The free text of a halt comes from a nudge.dev/halted annotation, which
// whoever may annotate a workload writes: each sink gets it escaped for its
// format, so that it can neither mention a whole space, nor add a link or
// markup, nor start a line of its own; JSON carries it as it is.
func TestHaltedTextEscapedPerSink(t *testing.T) {
	const halted = "the rollout of Deployment shop/x <users/all> [go](https://evil.example) *now* & <!channel>\n\x1b[2Jnudge detected"
	const head = "nudge halted the rollout of *web* of type *Deployment* in namespace *shop* for changes in *ConfigMap shop/app*: "
	tests := map[Sink]struct {
		field string // the JSON field of the text, "" for the raw body
		want  string
	}{
		SinkSlack: {field: "text", want: head + "the rollout of Deployment shop/x &lt;users/all&gt; [go](https://evil.example) *now* &amp; &lt;!channel&gt;  [2Jnudge detected"},
		SinkTeams: {field: "text", want: head + `the rollout of Deployment shop/x &lt;users/all&gt; \[go\](https://evil.example) \*now\* &amp; &lt;!channel&gt;  \[2Jnudge detected`},
		SinkGChat: {field: "text", want: head + "the rollout of Deployment shop/x ‹users/all› [go](https://evil.example) *now* & ‹!channel›  [2Jnudge detected"},
		SinkRaw: {want: "nudge halted the rollout of web of type Deployment in namespace shop for changes in ConfigMap shop/app: " +
			"the rollout of Deployment shop/x <users/all> [go](https://evil.example) *now* & <!channel>  [2Jnudge detected"},
		SinkJSON: {field: "halted", want: halted},
	}
	for sink, tc := range tests {
		t.Run(string(sink), func(t *testing.T) {
			g := NewWithT(t)
			a := Alert{Kind: "Deployment", Namespace: "shop", Name: "web", Sources: []string{"ConfigMap shop/app"}, Time: t0, Halted: halted}
			body, _, err := payload(sink, a, "")
			g.Expect(err).NotTo(HaveOccurred())
			if tc.field == "" {
				g.Expect(string(body)).To(Equal(tc.want))
				return
			}
			var got map[string]any
			g.Expect(json.Unmarshal(body, &got)).To(Succeed())
			if sink == SinkSlack {
				got = got["attachments"].([]any)[0].(map[string]any)
			}
			g.Expect(got).To(HaveKeyWithValue(tc.field, tc.want))
		})
	}
}
