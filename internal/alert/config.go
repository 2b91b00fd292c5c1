package alert

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Sink names the service an alert is formatted for: the value of
// ALERT_SINK.
type Sink string

// The sinks. Slack, Teams, Google Chat and raw send what Reloader sends
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/alerts/alert.go);
// JSON is nudge's, for --webhook-url and for receivers that want fields.
const (
	// SinkSlack posts to a Slack incoming webhook
	// (https://api.slack.com/messaging/webhooks) one legacy attachment
	// (https://api.slack.com/reference/messaging/attachments), as Reloader
	// does, plus a plain-text fallback for notifications; "&", "<" and ">"
	// in the text are escaped
	// (https://api.slack.com/reference/surfaces/formatting#escaping):
	//	{"attachments":[{"color":"good","author_name":"nudge","fallback":"<plain message>","text":"<message>","mrkdwn_in":["text"]}]}
	SinkSlack Sink = "slack"
	// SinkTeams posts to a Microsoft Teams incoming webhook (an Office 365
	// connector,
	// https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook)
	// the shortest legacy MessageCard
	// (https://learn.microsoft.com/en-us/outlook/actionable-messages/message-card-reference),
	// as Reloader does:
	//	{"text":"<message>"}
	// Teams Workflows webhooks, which replace the retired connectors
	// (https://devblogs.microsoft.com/microsoft365dev/retirement-of-office-365-connectors-within-microsoft-teams/),
	// want an Adaptive Card instead; Reloader does not send one and neither
	// does nudge.
	SinkTeams Sink = "teams"
	// SinkGChat posts to a Google Chat incoming webhook
	// (https://developers.google.com/workspace/chat/quickstart/webhooks) a
	// text message (https://developers.google.com/workspace/chat/format-messages):
	//	{"text":"<message>"}
	SinkGChat Sink = "gchat"
	// SinkRaw posts the message as plain text without markup (Content-Type
	// "text/plain; charset=utf-8"), as Reloader's default "webhook" sink
	// does; it is not JSON. ALERT_SINK "webhook", Reloader's documented
	// name, and "" select it:
	//	<info> : nudge detected changes in ConfigMap shop/app. Hence reloaded web of type Deployment in namespace shop
	SinkRaw Sink = "raw"
	// SinkJSON posts a JSON object (Content-Type application/json) with the
	// alert's fields and Reloader's --webhook-url body:
	//	{"webhook":"update successful","kind":"Deployment","namespace":"shop","name":"web",
	//	 "sources":["ConfigMap shop/app"],"time":"2026-11-22T10:00:00Z","additionalInfo":"..."}
	// ("additionalInfo" only when set). Reloader has no such alert sink.
	SinkJSON Sink = "json"
)

// Defaults ConfigFromEnv applies; Reloader has no setting for them.
const (
	// DefaultTimeout bounds each HTTP attempt.
	DefaultTimeout = 10 * time.Second
	// DefaultRetries is the number of attempts after the first.
	DefaultRetries = 3
)

// Errors Config.Validate and ConfigFromEnv return, wrapped.
var (
	// ErrInvalidSink: the sink is none of the Sink constants.
	ErrInvalidSink = errors.New("invalid alert sink")
	// ErrMissingURL: alerts are enabled without a webhook URL.
	ErrMissingURL = errors.New("alert webhook URL is required")
	// ErrInvalidURL: the webhook URL does not parse, is not http or https,
	// or has no host.
	ErrInvalidURL = errors.New("invalid alert webhook URL")
	// ErrInvalidConfig: a negative timeout or retry count, or a proxy URL
	// that does not parse.
	ErrInvalidConfig = errors.New("invalid alert config")
)

// Config configures alerts.
type Config struct {
	// Enabled turns alerts on (ALERT_ON_RELOAD "true"); a disabled Config
	// ignores every other field.
	Enabled bool
	// Sink is the payload format (ALERT_SINK).
	Sink Sink
	// WebhookURL receives the POSTs (ALERT_WEBHOOK_URL); an absolute http or
	// https URL. It is a secret: Slack, Teams and Google Chat put a token in
	// its path or query.
	WebhookURL string
	// AdditionalInfo, when set, prefixes the message as "<info> : <message>"
	// (ALERT_ADDITIONAL_INFO), e.g. the cluster's name.
	AdditionalInfo string
	// Proxy, when set, is the HTTP proxy for the POSTs (ALERT_WEBHOOK_PROXY);
	// otherwise the client's transport decides (for the default one,
	// $HTTPS_PROXY and friends).
	Proxy *url.URL
	// Timeout bounds each attempt, response included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Retries is the number of attempts after the first, made after a
	// network error, a timeout, a 5xx or a 429 response; zero means none.
	Retries int
}

// Validate returns nil for a disabled Config; for an enabled one it returns
// an error wrapping ErrInvalidSink, ErrMissingURL, ErrInvalidURL or
// ErrInvalidConfig. No error quotes the webhook URL.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch c.Sink {
	case SinkSlack, SinkTeams, SinkGChat, SinkRaw, SinkJSON:
	default:
		return fmt.Errorf("%w %q: want slack, teams, gchat, webhook (raw) or json", ErrInvalidSink, c.Sink)
	}
	if err := checkURL(c.WebhookURL); err != nil {
		return err
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: negative timeout %s", ErrInvalidConfig, c.Timeout)
	}
	if c.Retries < 0 {
		return fmt.Errorf("%w: negative retries %d", ErrInvalidConfig, c.Retries)
	}
	return nil
}

func checkURL(raw string) error {
	if raw == "" {
		return ErrMissingURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, token and all.
		return fmt.Errorf("%w: does not parse", ErrInvalidURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q, want http or https", ErrInvalidURL, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	return nil
}

// Environment variables, Reloader's names.
const (
	envOnReload       = "ALERT_ON_RELOAD"
	envSink           = "ALERT_SINK"
	envWebhookURL     = "ALERT_WEBHOOK_URL"
	envAdditionalInfo = "ALERT_ADDITIONAL_INFO"
	envProxy          = "ALERT_WEBHOOK_PROXY"
)

// ConfigFromEnv reads Reloader's alert variables through getenv (main passes
// os.Getenv):
//   - ALERT_ON_RELOAD "true" (any case) enables alerts; anything else,
//     unset included, disables them and the other variables are ignored.
//   - ALERT_SINK, trimmed and lower-cased: slack, teams, gchat, webhook or
//     raw (the same plain-text sink, the default), or json. Reloader sends
//     raw text for an unknown value; nudge returns ErrInvalidSink instead.
//   - ALERT_WEBHOOK_URL, trimmed: required.
//   - ALERT_ADDITIONAL_INFO, trimmed: optional.
//   - ALERT_WEBHOOK_PROXY, trimmed: optional proxy URL.
//
// Timeout and Retries get DefaultTimeout and DefaultRetries. The error, from
// Validate or about the proxy, never quotes either URL.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if !strings.EqualFold(strings.TrimSpace(getenv(envOnReload)), "true") {
		return Config{}, nil
	}
	c := Config{
		Enabled:        true,
		Sink:           parseSink(getenv(envSink)),
		WebhookURL:     strings.TrimSpace(getenv(envWebhookURL)),
		AdditionalInfo: strings.TrimSpace(getenv(envAdditionalInfo)),
		Timeout:        DefaultTimeout,
		Retries:        DefaultRetries,
	}
	if p := strings.TrimSpace(getenv(envProxy)); p != "" {
		u, err := url.Parse(p)
		if err != nil || u.Host == "" {
			return Config{}, fmt.Errorf("%w: %s does not parse as a URL", ErrInvalidConfig, envProxy)
		}
		c.Proxy = u
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", envNameFor(err), err)
	}
	return c, nil
}

func parseSink(v string) Sink {
	switch s := Sink(strings.ToLower(strings.TrimSpace(v))); s {
	case "", "webhook":
		return SinkRaw
	default:
		return s
	}
}

func envNameFor(err error) string {
	switch {
	case errors.Is(err, ErrInvalidSink):
		return envSink
	case errors.Is(err, ErrMissingURL), errors.Is(err, ErrInvalidURL):
		return envWebhookURL
	default:
		return "alert config"
	}
}
