package alert

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"nudge.dev/nudge/internal/refs"
)

// Alert describes one rollout nudge triggered. It never holds a source's
// data, only names.
type Alert struct {
	// Kind, Namespace and Name identify the workload rolled, e.g.
	// "Deployment", "shop", "web".
	Kind, Namespace, Name string
	// Sources are the changed ConfigMaps and Secrets that caused it, each
	// as "<Kind> <namespace>/<name>", e.g. "ConfigMap shop/app".
	Sources []string
	// Time is when nudge rolled the workload; Send fills in the current time
	// when it is zero. Only SinkJSON sends it.
	Time time.Time
	// Halted, when not empty, makes the alert one of a rollout nudge halted
	// instead of starting (--max-concurrent-rollouts), and says why, e.g.
	// "the rollout of Deployment shop/canary for the same change failed".
	// It is free text (it names what a nudge.dev/halted annotation says,
	// which whoever may annotate a workload writes): each sink escapes it
	// for its format (escaperOf).
	Halted string
}

// Sources returns the names of sources as Alert.Sources holds them.
func Sources(sources []refs.Source) []string {
	names := make([]string, len(sources))
	for i, src := range sources {
		names[i] = string(src.Kind) + " " + src.Namespace + "/" + src.Name
	}
	return names
}

// reloaderWebhookBody is the one field of Reloader's --webhook-url body
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/handler/upgrade.go).
const reloaderWebhookBody = "update successful"

// message is the alert's text in Reloader's words with nudge's name:
//
//	<info> : nudge detected changes in *ConfigMap shop/app*. Hence reloaded *web* of type *Deployment* in namespace *shop*
//
// em marks up a name (bold, or nothing for plain text).
//
// or, for a halt:
//
//	<info> : nudge halted the rollout of *web* of type *Deployment* in namespace *shop* for changes in *ConfigMap shop/app*: <why>
//
// where <why> is a.Halted escaped by esc.
func message(a Alert, info string, em, esc func(string) string) string {
	var b strings.Builder
	if info != "" {
		b.WriteString(info)
		b.WriteString(" : ")
	}
	if a.Halted != "" {
		fmt.Fprintf(&b, "nudge halted the rollout of %s of type %s in namespace %s for changes in ", em(a.Name), em(a.Kind), em(a.Namespace))
		for i, s := range a.Sources {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(em(s))
		}
		b.WriteString(": " + esc(a.Halted))
		return b.String()
	}
	b.WriteString("nudge detected changes")
	for i, s := range a.Sources {
		if i == 0 {
			b.WriteString(" in ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(em(s))
	}
	fmt.Fprintf(&b, ". Hence reloaded %s of type %s in namespace %s", em(a.Name), em(a.Kind), em(a.Namespace))
	return b.String()
}

func bold(s string) string  { return "*" + s + "*" }
func plain(s string) string { return s }

// slackEscaper escapes the three characters Slack's mrkdwn reserves
// (https://api.slack.com/reference/surfaces/formatting#escaping).
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// teamsEscaper escapes text for a Teams MessageCard's text, which Teams
// reads as Markdown and a subset of HTML
// (https://learn.microsoft.com/en-us/microsoftteams/platform/task-modules-and-cards/cards/cards-format):
// the HTML characters as entities, and with a backslash (CommonMark's
// escape of ASCII punctuation) the ones that open emphasis, code, a link or
// an image.
var teamsEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;",
	`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`, "~", `\~`)

// gchatEscaper neutralises the characters Google Chat's text format opens a
// link or a mention with, <https://…|text> and <users/all>
// (https://developers.google.com/workspace/chat/format-messages): that
// format has no escape and shows an entity as typed, so the angle brackets
// become the look-alike single angle quotation marks ‹ and ›.
var gchatEscaper = strings.NewReplacer("<", "\u2039", ">", "\u203a")

// oneLine returns s with each control character (a line break, a tab, an
// escape) replaced by a space, so that free text cannot start a line of its
// own in a chat message or a plain-text body.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// escaperOf returns the function that escapes free text (Alert.Halted) for
// sink's format: on one line for the chat sinks and raw, then for Teams'
// Markdown and HTML, or Google Chat's links and mentions; Slack escapes the
// whole text (slackEscaper). JSON carries it as it is.
func escaperOf(sink Sink) func(string) string {
	switch sink {
	case SinkTeams:
		return func(s string) string { return teamsEscaper.Replace(oneLine(s)) }
	case SinkGChat:
		return func(s string) string { return gchatEscaper.Replace(oneLine(s)) }
	case SinkSlack, SinkRaw:
		return oneLine
	}
	return plain
}

type slackAttachment struct {
	Color      string   `json:"color"`
	AuthorName string   `json:"author_name"`
	Fallback   string   `json:"fallback"`
	Text       string   `json:"text"`
	MarkdownIn []string `json:"mrkdwn_in"`
}

type slackMessage struct {
	Attachments []slackAttachment `json:"attachments"`
}

type textMessage struct {
	Text string `json:"text"`
}

type jsonMessage struct {
	Webhook        string    `json:"webhook"`
	Kind           string    `json:"kind"`
	Namespace      string    `json:"namespace"`
	Name           string    `json:"name"`
	Sources        []string  `json:"sources"`
	Time           time.Time `json:"time"`
	Halted         string    `json:"halted,omitempty"`
	AdditionalInfo string    `json:"additionalInfo,omitempty"`
}

const (
	contentJSON = "application/json"
	contentText = "text/plain; charset=utf-8"
)

// payload returns the body sink wants for a and its content type. It returns
// ErrInvalidSink for an unknown sink.
func payload(sink Sink, a Alert, info string) (body []byte, contentType string, err error) {
	esc := escaperOf(sink)
	var v any
	switch sink {
	case SinkSlack:
		color := "good"
		if a.Halted != "" {
			color = "danger"
		}
		v = slackMessage{Attachments: []slackAttachment{{
			Color:      color,
			AuthorName: "nudge",
			Fallback:   message(a, info, plain, esc),
			Text:       slackEscaper.Replace(message(a, info, bold, esc)),
			MarkdownIn: []string{"text"},
		}}}
	case SinkTeams, SinkGChat:
		v = textMessage{Text: message(a, info, bold, esc)}
	case SinkRaw:
		return []byte(message(a, info, plain, esc)), contentText, nil
	case SinkJSON:
		sources := a.Sources
		if sources == nil {
			sources = []string{}
		}
		webhook := reloaderWebhookBody
		if a.Halted != "" {
			webhook = "rollout halted"
		}
		v = jsonMessage{
			Webhook:        webhook,
			Kind:           a.Kind,
			Namespace:      a.Namespace,
			Name:           a.Name,
			Sources:        sources,
			Time:           a.Time.UTC(),
			Halted:         a.Halted,
			AdditionalInfo: info,
		}
	default:
		return nil, "", fmt.Errorf("%w %q", ErrInvalidSink, sink)
	}
	body, err = json.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("encoding %s alert: %w", sink, err)
	}
	return body, contentJSON, nil
}
