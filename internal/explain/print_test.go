package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// hostile holds what anyone who may write an Event, an annotation or a
// producer's status could put in front of a user of nudge explain: a
// terminal title and a screen clear (OSC and CSI sequences), a carriage
// return that overwrites the line, a line break that forges a line, a tab
// that shifts a column, a C1 CSI, DEL, a bidirectional override, and a
// byte that is not UTF-8.
const hostile = "ok\x1b]0;pwned\x07\x1b[2J\rover\nForged: line\tcol\u009b31m\x7f\u202eevil\xff"

func TestPrintableOutput(t *testing.T) {
	when := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	workload := &Workload{Kind: "Deployment", Namespace: "shop", Name: "web",
		Status:      Status{State: StateHalted, Message: hostile},
		Comparison:  Comparison{Reason: hostile},
		Annotations: []Annotation{{Key: "nudge.dev/halted", Value: hostile, Place: "metadata", Selects: hostile}},
		Malformed:   []string{hostile},
		References:  []Reference{{Kind: "Secret", Namespace: "shop", Name: "db", Outcome: hostile, Content: ContentUnknown}},
		Events:      []Event{{Time: when, Type: "Warning", Reason: "NotReady", Message: hostile}}}
	source := &Source{Kind: "Secret", Namespace: "shop", Name: "db", Exists: true,
		Workloads: []Dependent{{Kind: "Deployment", Name: "web", Why: hostile}}}
	fleet := &Fleet{Halted: []Halted{{Workload: "Deployment shop/web", Source: "Secret shop/db", Content: "abc", After: hostile}},
		Failed:   []Rollout{{Workload: "Deployment shop/api", Since: when, Reason: hostile}},
		Bindings: []Binding{{Binding: "shop/harbor", Reason: "Refused", Message: hostile}},
		Unread:   []string{hostile}}
	tests := map[string]func(*bytes.Buffer) error{
		"a workload's status, content, annotations, references and Events": func(b *bytes.Buffer) error { return PrintWorkload(b, 0, workload) },
		"a workload cut to the terminal's width":                           func(b *bytes.Buffer) error { return PrintWorkload(b, 60, workload) },
		"a source's dependents":                                            func(b *bytes.Buffer) error { return PrintSource(b, 0, source) },
		"the fleet's halts, failures and bindings":                         func(b *bytes.Buffer) error { return PrintFleet(b, 0, fleet) },
	}
	for name, print := range tests {
		t.Run(name+" are printed escaped", func(t *testing.T) {
			g := NewWithT(t)
			var b bytes.Buffer
			g.Expect(print(&b)).To(Succeed())
			out := b.String()
			g.Expect(utf8.ValidString(out)).To(BeTrue(), "valid UTF-8")
			for _, r := range out {
				g.Expect(r == '\n' || !(unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r))).To(BeTrue(),
					"no character a terminal acts on: %q in\n%s", r, out)
			}
			for _, line := range strings.Split(out, "\n") {
				g.Expect(strings.TrimSpace(line)).NotTo(HavePrefix("Forged"), "no line forged by a line break")
			}
			g.Expect(out).To(ContainSubstring(`\x1b]0;pwned`), "the escape shown, not acted on")
		})
	}

	t.Run("the escape shown reads as Go would write the characters", func(t *testing.T) {
		NewWithT(t).Expect(printable(hostile)).To(Equal(
			`ok\x1b]0;pwned\a\x1b[2J\rover\nForged: line\tcol\u009b31m\x7f\u202eevil\xff`))
	})
	t.Run("plain text is printed as it is", func(t *testing.T) {
		NewWithT(t).Expect(printable("Rolled Deployment shop/web — ‹ok›")).To(Equal("Rolled Deployment shop/web — ‹ok›"))
	})
	for _, format := range []string{"json", "yaml"} {
		t.Run("-o "+format+" escapes them and reads back as written", func(t *testing.T) {
			g := NewWithT(t)
			var b bytes.Buffer
			g.Expect(Encode(&b, format, workload)).To(Succeed())
			for _, r := range b.String() {
				g.Expect(r == '\n' || !(unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r))).To(BeTrue(),
					"no character a terminal acts on: %q in\n%s", r, b.String())
			}
			j := b.Bytes()
			if format == "yaml" {
				var err error
				j, err = yaml.YAMLToJSON(j)
				g.Expect(err).NotTo(HaveOccurred())
			}
			var back explanation
			g.Expect(json.Unmarshal(j, &back)).To(Succeed())
			g.Expect(back.Workload.Events[0].Message).To(Equal(strings.ToValidUTF8(hostile, "\uFFFD")), "the message, as JSON holds it")
		})
	}
}
