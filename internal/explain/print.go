package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
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
// "source" or "fleet"; JSON indented by four spaces. It returns an error wrapping
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
	var b []byte
	var err error
	switch format {
	case "json":
		b, err = json.MarshalIndent(obj, "", "    ")
		b = append(b, '\n')
	case "yaml":
		b, err = yaml.Marshal(obj)
	default:
		return fmt.Errorf(`%w: output format %q: want "json" or "yaml"`, ErrUsage, format)
	}
	if err != nil {
		return fmt.Errorf("encoding the explanation: %w", err)
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
	fmt.Fprintf(&b, "%s %s/%s\n", w.Kind, w.Namespace, w.Name)
	fmt.Fprintf(&b, "Install:      %s\n", w.Install)
	fmt.Fprintf(&b, "Status:       %s: %s\n", w.Status.State, w.Status.Message)
	if w.Status.Rollout != "" {
		fmt.Fprintf(&b, "Rollout:      %s\n", w.Status.Rollout)
	}
	if w.Status.Until != nil {
		fmt.Fprintf(&b, "Until:        %s\n", w.Status.Until.Format(time.RFC3339))
	}
	if w.Comparison.Compared {
		fmt.Fprintf(&b, "Content:      compared with key %s (Secret %s)\n", w.Comparison.KeyID, w.Comparison.KeySecret)
	} else {
		fmt.Fprintf(&b, "Content:      %s\n", w.Comparison.Reason)
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
		fmt.Fprintf(&b, "  malformed: %s\n", m)
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
	fmt.Fprintf(&b, "%s %s/%s (%s)\n", s.Kind, s.Namespace, s.Name, state)
	fmt.Fprintf(&b, "Install: %s\n\n", s.Install)
	if len(s.Workloads) == 0 {
		fmt.Fprintf(&b, "No workload in %s reads, names or excludes it: a change rolls nothing.\n", s.Namespace)
		return write(out, width, b.Bytes())
	}
	rows := [][]string{{"WORKLOAD", "ROLLS", "READ AS", "KEYS", "WHY"}}
	for _, d := range s.Workloads {
		rows = append(rows, []string{d.Kind + "/" + d.Name, yesNo(d.WouldRoll), strings.Join(d.ReadAs, ","), keys(d.Keys), d.Why})
	}
	table(&b, rows)
	return write(out, width, b.Bytes())
}

// table writes rows aligned in columns, indented by two spaces.
func table(b *bytes.Buffer, rows [][]string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	_ = tw.Flush() // writes to a bytes.Buffer cannot fail
}

// write copies text to out, each line cut to width characters with "…"
// when longer (no limit when width <= 0).
func write(out io.Writer, width int, text []byte) error {
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
