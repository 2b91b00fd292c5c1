package alert

import (
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
)

func TestConfigFromEnv(t *testing.T) {
	const hook = "https://hooks.slack.com/services/T0/B0/s3cr3t"
	tests := map[string]struct {
		env     map[string]string
		want    Config
		wantErr error
	}{
		"every variable set gives an enabled config with defaults": {
			env: map[string]string{
				"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": hook,
				"ALERT_ADDITIONAL_INFO": " cluster: prod-eu ", "ALERT_WEBHOOK_PROXY": "http://proxy.internal:3128",
			},
			want: Config{
				Enabled: true, Sink: SinkSlack, WebhookURL: hook, AdditionalInfo: "cluster: prod-eu",
				Proxy: &url.URL{Scheme: "http", Host: "proxy.internal:3128"}, Timeout: DefaultTimeout, Retries: DefaultRetries,
			},
		},
		"an unset sink is the raw sink, Reloader's default": {
			env:  map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": hook},
			want: Config{Enabled: true, Sink: SinkRaw, WebhookURL: hook, Timeout: DefaultTimeout, Retries: DefaultRetries},
		},
		"webhook, Reloader's documented name, is the raw sink": {
			env:  map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "webhook", "ALERT_WEBHOOK_URL": hook},
			want: Config{Enabled: true, Sink: SinkRaw, WebhookURL: hook, Timeout: DefaultTimeout, Retries: DefaultRetries},
		},
		"the sink and URL are trimmed and the sink is case-insensitive": {
			env:  map[string]string{"ALERT_ON_RELOAD": "TRUE", "ALERT_SINK": " GChat ", "ALERT_WEBHOOK_URL": " " + hook + "\n"},
			want: Config{Enabled: true, Sink: SinkGChat, WebhookURL: hook, Timeout: DefaultTimeout, Retries: DefaultRetries},
		},
		"teams and json are sinks": {
			env:  map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "json", "ALERT_WEBHOOK_URL": hook},
			want: Config{Enabled: true, Sink: SinkJSON, WebhookURL: hook, Timeout: DefaultTimeout, Retries: DefaultRetries},
		},
		"an unknown sink is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "discord", "ALERT_WEBHOOK_URL": hook},
			wantErr: ErrInvalidSink,
		},
		"enabled without a URL is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack"},
			wantErr: ErrMissingURL,
		},
		"a URL that is not http or https is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "ftp://hooks.example/s3cr3t"},
			wantErr: ErrInvalidURL,
		},
		"a URL that does not parse is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/%zz/s3cr3t"},
			wantErr: ErrInvalidURL,
		},
		"a relative URL is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "/services/s3cr3t"},
			wantErr: ErrInvalidURL,
		},
		"a proxy that does not parse is an error": {
			env:     map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": hook, "ALERT_WEBHOOK_PROXY": "http://user:s3cr3t@%zz"},
			wantErr: ErrInvalidConfig,
		},
		"disabled ignores the rest, however wrong": {
			env:  map[string]string{"ALERT_SINK": "discord", "ALERT_WEBHOOK_PROXY": "%zz"},
			want: Config{},
		},
		"a value other than true disables, as in Reloader": {
			env:  map[string]string{"ALERT_ON_RELOAD": "yes", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": hook},
			want: Config{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != nil {
				g.Expect(err).To(MatchError(tc.wantErr))
				g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"), "errors must not quote a webhook or proxy URL")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestConfigValidate(t *testing.T) {
	valid := Config{Enabled: true, Sink: SinkTeams, WebhookURL: "https://example.webhook.office.com/webhookb2/x"}
	tests := map[string]struct {
		mutate  func(*Config)
		wantErr error
	}{
		"a complete config is valid":      {mutate: func(*Config) {}},
		"a disabled config is valid":      {mutate: func(c *Config) { *c = Config{Sink: "nonsense"} }},
		"an empty sink is invalid":        {mutate: func(c *Config) { c.Sink = "" }, wantErr: ErrInvalidSink},
		"a negative timeout is invalid":   {mutate: func(c *Config) { c.Timeout = -1 }, wantErr: ErrInvalidConfig},
		"negative retries are invalid":    {mutate: func(c *Config) { c.Retries = -1 }, wantErr: ErrInvalidConfig},
		"a URL without a host is invalid": {mutate: func(c *Config) { c.WebhookURL = "https:///x" }, wantErr: ErrInvalidURL},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := valid
			tc.mutate(&c)
			err := c.Validate()
			if tc.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.wantErr))
		})
	}
}
