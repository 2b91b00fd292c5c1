package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// APIVersion and Kind of the object Encode writes, for -o json and yaml.
const (
	APIVersion = "nudge.dev/v1alpha1"
	Kind       = "Explanation"
)

// Encode writes a *Workload, *Source or *Fleet to out as format "json" or "yaml", the
// way kubectl's -o json and -o yaml print an object: an object of kind
// Explanation with apiVersion, kind, and the report under "workload",
// "source" or "fleet"; JSON indented by four spaces. Every character a
// terminal could act on (see printable) is written as a \u escape, which
// both formats read back as the character. It returns an error wrapping
// ErrUsage for another format.
func Encode(out io.Writer, format string, report any) error {
	obj := explanation{APIVersion: APIVersion, Kind: Kind}
	switch r := report.(type) {
	case *Workload:
		obj.Workload = r
	case *Source:
		obj.Source = r
	case *Fleet:
		obj.Fleet = r
	}
	if format != "json" && format != "yaml" {
		return fmt.Errorf(`%w: output format %q: want "json" or "yaml"`, ErrUsage, format)
	}
	b, err := json.MarshalIndent(obj, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding the explanation: %w", err)
	}
	if format == "yaml" {
		if b, err = toYAML(b); err != nil {
			return fmt.Errorf("encoding the explanation: %w", err)
		}
	} else {
		b = append(escapeJSON(b, `\u%04x`), '\n')
	}
	_, err = out.Write(b)
	return err
}

// explanation is the object Encode writes.
type explanation struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Workload   *Workload `json:"workload,omitempty"`
	Source     *Source   `json:"source,omitempty"`
	Fleet      *Fleet    `json:"fleet,omitempty"`
}

// PrintWorkload writes w as text to out, each line cut to width characters
// (no limit when width <= 0).
func PrintWorkload(out io.Writer, width int, w *Workload) error {
	var b bytes.Buffer
	linef(&b, "%s %s/%s\n", w.Kind, w.Namespace, w.Name)
	linef(&b, "Install:      %s\n", w.Install)
	if w.TemplateFrom != "" {
		linef(&b, "Pod template: %s's (spec.workloadRef): its references are read there, the rollout is written here\n", w.TemplateFrom)
	}
	linef(&b, "Status:       %s: %s\n", w.Status.State, w.Status.Message)
	if w.Status.Rollout != "" {
		linef(&b, "Rollout:      %s\n", w.Status.Rollout)
	}
	if len(w.Status.Paused) > 0 {
		linef(&b, "Paused by:    nudge.dev/paused on %s\n", strings.Join(w.Status.Paused, ", "))
	}
	if w.Status.Until != nil {
		fmt.Fprintf(&b, "Until:        %s\n", w.Status.Until.Format(time.RFC3339))
	}
	if w.Comparison.Compared {
		linef(&b, "Content:      compared with key %s (Secret %s)\n", w.Comparison.KeyID, w.Comparison.KeySecret)
	} else {
		linef(&b, "Content:      %s\n", w.Comparison.Reason)
	}
	last := "never"
	if w.LastRollout != nil {
		last = w.LastRollout.Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "Last rollout: %s\n", last)

	b.WriteString("\nAnnotations:\n")
	if len(w.Annotations) == 0 {
		b.WriteString("  none\n")
	} else {
		rows := [][]string{{"KEY", "VALUE", "PLACE", "SELECTS"}}
		for _, a := range w.Annotations {
			rows = append(rows, []string{a.Key, strconv.Quote(a.Value), a.Place, a.Selects})
		}
		table(&b, rows)
	}
	for _, m := range w.Malformed {
		linef(&b, "  malformed: %s\n", m)
	}

	b.WriteString("\nReferences:\n")
	if len(w.References) == 0 {
		b.WriteString("  none\n")
	} else {
		rows := [][]string{{"KIND", "NAME", "KEYS", "OPTIONAL", "READ AS", "OUTCOME", "CONTENT"}}
		for _, r := range w.References {
			name := r.Name
			if r.Namespace != w.Namespace {
				name = r.Namespace + "/" + name
			}
			rows = append(rows, []string{r.Kind, name, keys(r.Keys), yesNo(r.Optional),
				strings.Join(r.ReadAs, ","), r.Outcome, r.Content})
		}
		table(&b, rows)
		for _, r := range w.References {
			if slices.Contains(r.ReadAs, "selector") && r.Outcome == "Counted" {
				linef(&b, "  %s %s matches %s\n", r.Kind, r.Name, matched(r.Matched))
			}
		}
	}

	if r := w.Rotation; r != nil {
		fmt.Fprintf(&b, "\nPods (read as env or subPath, never refreshed):\n")
		if r.Unread != "" {
			linef(&b, "  %s\n", r.Unread)
		}
		for _, s := range r.Sources {
			linef(&b, "  %s\n", s.Message)
		}
	}

	b.WriteString("\nEvents:\n")
	if len(w.Events) == 0 {
		b.WriteString("  none\n")
	} else {
		rows := [][]string{{"TIME", "TYPE", "REASON", "MESSAGE"}}
		for _, ev := range w.Events {
			rows = append(rows, []string{ev.Time.Format(time.RFC3339), ev.Type, ev.Reason, ev.Message})
		}
		table(&b, rows)
	}
	return write(out, width, b.Bytes())
}

// PrintSource writes s as text to out, each line cut to width characters (no
// limit when width <= 0).
func PrintSource(out io.Writer, width int, s *Source) error {
	var b bytes.Buffer
	state := "exists"
	if !s.Exists {
		state = "does not exist"
	}
	linef(&b, "%s %s/%s (%s)\n", s.Kind, s.Namespace, s.Name, state)
	linef(&b, "Install: %s\n\n", s.Install)
	if len(s.Workloads) == 0 {
		linef(&b, "No workload in %s reads, names or excludes it: a change rolls nothing.\n", s.Namespace)
		return write(out, width, b.Bytes())
	}
	rows := [][]string{{"WORKLOAD", "ROLLS", "READ AS", "KEYS", "WHY"}}
	for _, d := range s.Workloads {
		rows = append(rows, []string{d.Kind + "/" + d.Name, yesNo(d.WouldRoll), strings.Join(d.ReadAs, ","), keys(d.Keys), d.Why})
	}
	table(&b, rows)
	return write(out, width, b.Bytes())
}

// table writes rows aligned in columns, indented by two spaces, each cell
// escaped by printable (a tab or a line break in one moves no column).
func table(b *bytes.Buffer, rows [][]string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = printable(c)
		}
		fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
	}
	_ = tw.Flush() // writes to a bytes.Buffer cannot fail
}

// linef writes format to b with each argument printed as %s would and
// escaped by printable, so that what a Kubernetes object says stays on its
// line and cannot drive the terminal. The format's verbs must be %s.
func linef(b *bytes.Buffer, format string, args ...any) {
	for i, a := range args {
		args[i] = printable(fmt.Sprint(a))
	}
	fmt.Fprintf(b, format, args...)
}

// printable returns s with each character a terminal could act on, or that
// could change how the line reads, written as a Go escape (\x1b, \n,
// \u202e): control characters (C0, DEL and C1, the escape sequences of
// CVE-2021-25743's class included), the Unicode bidirectional controls
// (CVE-2021-42574's class), and each byte that is not UTF-8. kubectl's
// printers.EscapeTerminal escapes ESC and CR alone; nudge explain prints
// Event messages, annotations and producers' reasons, which anyone who may
// write them chooses, so it escapes all of them.
func printable(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports a control character or a bidirectional control.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// escapeJSON returns b, JSON, with each character printable would escape
// written as format (a \u escape of the rune, or of a stand-in for it:
// see toYAML): encoding/json escapes C0 in strings itself (a C0 character
// left is the indentation's white space), and writes DEL, C1 and the
// bidirectional controls as they are. Such a character can only be inside
// a string, where the escape stands for it.
func escapeJSON(b []byte, format string) []byte {
	unescaped := func(r rune) bool { return r >= 0x7f && unsafeRune(r) }
	if !bytes.ContainsFunc(b, unescaped) {
		return b
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r >= 0x7f && unicode.IsControl(r):
			fmt.Fprintf(&out, `\u%04x`, r)
		case unescaped(r):
			fmt.Fprintf(&out, format, r)
		default:
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

// bidiStandIn is a bidirectional control as toYAML has the YAML emitter
// write it: its code point between two U+FEFF, which the emitter escapes.
var bidiStandIn = regexp.MustCompile(`\\uFEFF([0-9a-f]{4})\\uFEFF`)

// toYAML returns j, JSON, as YAML, the way kubectl's -o yaml writes it
// (sigs.k8s.io/yaml), with no character printable would escape. The YAML
// emitter escapes control characters itself (a double-quoted "\e"), but
// writes the bidirectional controls as they are, YAML counting them
// printable; so each is handed to it as its code point between two U+FEFF,
// which it must escape and which forces a double-quoted scalar, and the
// escapes are then made the rune's own \u escape. (A string that holds
// U+FEFF, four hex digits and U+FEFF reads back as that rune: shown safely
// all the same.)
func toYAML(j []byte) ([]byte, error) {
	y, err := yaml.JSONToYAML(escapeJSON(j, `\ufeff%04x\ufeff`))
	if err != nil {
		return nil, err
	}
	return bidiStandIn.ReplaceAll(y, []byte(`\u$1`)), nil
}

// write copies text to out, each line cut to width characters with "…"
// when longer (no limit when width <= 0). Every line is escaped by
// printable once more, so that nothing a printer missed reaches the
// terminal.
func write(out io.Writer, width int, text []byte) error {
	lines := strings.SplitAfter(string(text), "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		lines[i] = printable(body) + l[len(body):]
	}
	text = []byte(strings.Join(lines, ""))
	if width > 0 {
		lines := strings.SplitAfter(string(text), "\n")
		for i, l := range lines {
			body := strings.TrimSuffix(l, "\n")
			if utf8.RuneCountInString(body) > width {
				r := []rune(body)
				lines[i] = string(r[:width-1]) + "…" + l[len(body):]
			}
		}
		text = []byte(strings.Join(lines, ""))
	}
	_, err := out.Write(text)
	return err
}

func keys(k []string) string {
	if len(k) == 0 {
		return "*"
	}
	return strings.Join(k, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// String renders the install in one line: which settings, and the flags
// that differ from the defaults.
func (i Install) String() string {
	flags := "nudge's defaults"
	if len(i.Flags) > 0 {
		flags = strings.Join(i.Flags, " ")
	}
	if i.ConfigMap == "" {
		return fmt.Sprintf("no settings found (%s); following %s", i.Reason, flags)
	}
	return fmt.Sprintf("nudge %s (ConfigMap %s): %s", i.Version, i.ConfigMap, flags)
}

// maxMatched is how many of a label selector's matches explain names.
const maxMatched = 20

// matched renders the names a label selector matches: "nothing", or
// "3: a, b, c", at most maxMatched of them named.
func matched(names []string) string {
	switch {
	case len(names) == 0:
		return "nothing"
	case len(names) > maxMatched:
		return fmt.Sprintf("%d: %s and %d more", len(names), strings.Join(names[:maxMatched], ", "), len(names)-maxMatched)
	}
	return fmt.Sprintf("%d: %s", len(names), strings.Join(names, ", "))
}
