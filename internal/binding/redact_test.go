package binding

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/api/v1alpha1"
)

func TestRedact(t *testing.T) {
	tests := map[string]struct {
		msg  string
		raw  string
		typ  v1alpha1.ValueType
		want string
	}{
		"a value as written is taken out":             {msg: `Invalid value: AK1: bad`, raw: "AK1", want: `Invalid value: [redacted]: bad`},
		"a quoted value is taken out with its quotes": {msg: `Invalid value: "AK1": bad`, raw: "AK1", want: `Invalid value: [redacted]: bad`},
		"an escaped value is taken out":               {msg: `Invalid value: "a\"b": bad`, raw: `a"b`, want: `Invalid value: [redacted]: bad`},
		"an empty value changes nothing":              {msg: `x`, raw: "", want: `x`},
		"an integer is taken out as converted, not only as written": {
			msg: `admission webhook "ports.example.com" denied the request: port 42 is reserved`, raw: "042", typ: v1alpha1.TypeInteger,
			want: `admission webhook "ports.example.com" denied the request: port [redacted] is reserved`},
		"an integer is taken out as a webhook's float64 prints it": {
			msg: `denied: 1.23456789012e+11 exceeds the quota`, raw: "123456789012", typ: v1alpha1.TypeInteger,
			want: `denied: [redacted] exceeds the quota`},
		"an integer past 2^53 is taken out as JavaScript rounds it": {
			msg: `denied: 9007199254740992 is too large`, raw: "9007199254740993", typ: v1alpha1.TypeInteger,
			want: `denied: [redacted] is too large`},
		"a boolean is taken out as converted": {
			msg: `denied: tls=true is not allowed here`, raw: "True", typ: v1alpha1.TypeBoolean,
			want: `denied: tls=[redacted] is not allowed here`},
		"a value read with its newline is taken out when echoed trimmed": {
			msg: `denied: password "hunter2" is too weak`, raw: "hunter2\n",
			want: `denied: password "[redacted]" is too weak`},
		"a value is taken out as JSON escapes HTML in it": {
			msg: `denied: {"spec":{"url":"\u003ca\u0026b\u003e"}}`, raw: "<a&b>",
			want: `denied: {"spec":{"url":[redacted]}}`},
		"a value is taken out as Go escapes it in ASCII": {
			msg: `denied: "p\u00e4ss" refused`, raw: "päss",
			want: `denied: [redacted] refused`},
		"a value is taken out in base64, as JSON writes bytes": {
			msg: `denied: data.key=c2VjcmV0 refused`, raw: "secret",
			want: `denied: data.key=[redacted] refused`},
		"overlapping occurrences become one placeholder":              {msg: `ababa!`, raw: "aba", want: `[redacted]!`},
		"a placeholder never joins its neighbours into an occurrence": {msg: `a]]xx`, raw: "]x", want: `a][redacted]x`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			value, err := Convert([]byte(tc.raw), tc.typ)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(redact(tc.msg, echoes([]byte(tc.raw), value))).To(Equal(tc.want))
		})
	}
}

// FuzzRedact: whatever a Secret holds and whatever type it is bound as, a
// message that echoes it in any of the forms an API server or a webhook
// writes (echo picks one) keeps no occurrence of that echo once redacted,
// in the text around the placeholders; and a message with no echo is kept
// as it is unless it happens to hold a form.
func FuzzRedact(f *testing.F) {
	f.Add("AK1", uint8(0), uint8(0), "Invalid value: ", ": bad")
	f.Add("042", uint8(1), uint8(2), `admission webhook "x" denied the request: port `, " is reserved")
	f.Add("9007199254740993", uint8(1), uint8(5), "denied: ", "")
	f.Add("True", uint8(2), uint8(1), "tls=", "")
	f.Add("<a&b>\n", uint8(0), uint8(4), `{"spec":{"url":`, "}}")
	f.Add("]x", uint8(0), uint8(0), "a]", "x")
	f.Fuzz(func(t *testing.T, raw string, typ, echo uint8, prefix, suffix string) {
		types := []v1alpha1.ValueType{v1alpha1.TypeString, v1alpha1.TypeInteger, v1alpha1.TypeBoolean}
		value, err := Convert([]byte(raw), types[int(typ)%len(types)])
		if err != nil {
			return // never applied, never echoed
		}
		e := echoOf(t, raw, value, echo)
		if strings.TrimSpace(e) == "" {
			return
		}
		msg := prefix + e + suffix
		out := redact(msg, echoes([]byte(raw), value))
		for _, part := range strings.Split(out, redacted) {
			if strings.Contains(part, e) {
				t.Fatalf("redact(%q) = %q: echo %q of %q survives", msg, out, e, raw)
			}
		}
	})
}

// echoOf returns the form pick selects of value (raw, converted), as a
// refusal may write it: Go's %v, %q, %#v and %+q, JSON (encoding/json, as
// the API server echoes an object), the float64 a webhook that decodes JSON
// into any holds, printed with %v or as JavaScript would print it, or raw
// with the spaces around it trimmed.
func echoOf(t *testing.T, raw string, value any, pick uint8) string {
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	forms := []string{
		fmt.Sprint(value), fmt.Sprintf("%q", raw), fmt.Sprintf("%#v", value), string(b),
		fmt.Sprintf("%+q", raw), fmt.Sprint(decoded), strings.TrimSpace(raw),
	}
	if f, ok := decoded.(float64); ok {
		forms = append(forms, strconv.FormatFloat(f, 'f', -1, 64))
	}
	return forms[int(pick)%len(forms)]
}
