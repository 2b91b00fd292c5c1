package options

import (
	"encoding/csv"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
)

// ParseSelector reads the values given to Reloader's --namespace-selector or
// --resource-label-selector, one per occurrence of the flag, in the forms
// Reloader takes
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/config/flags/flags.go,
// and its v1 common.GetNamespaceLabelSelector), and returns one label
// selector in Kubernetes syntax (labels.Parse), the terms of every value
// ANDed:
//   - each value is a comma-separated list, read as pflag reads a string
//     slice (a CSV record: a field in double quotes may hold commas, and the
//     quotes are dropped), so `--namespace-selector="team=a"` as Reloader's
//     chart renders it means team=a;
//   - a value, or a field, wrapped in single quotes as a shell would take
//     them ('team in (a,b)') loses them; nudge's addition, for args copied
//     from a shell line;
//   - Reloader's legacy "key:value" means key=value, and "key:*" or "key=*"
//     mean "key exists"; nudge also reads "key==*" so, and "key!=*" as
//     "key does not exist";
//   - everything else is Kubernetes selector syntax: "a=b", "a!=b",
//     "a in (b,c)", "a notin (b)", "a", "!a".
//
// It returns "" for no values, and an error naming the value when the result
// is not a valid selector.
func ParseSelector(values []string) (string, error) {
	var fields []string
	for _, v := range values {
		v = unquote(strings.TrimSpace(v), '\'')
		if v == "" {
			continue
		}
		r := csv.NewReader(strings.NewReader(v))
		record, err := r.Read()
		if err != nil {
			return "", fmt.Errorf("reading %q as a comma-separated list: %w", v, err)
		}
		for _, f := range record {
			if f = legacyTerm(unquote(strings.TrimSpace(f), '\'')); f != "" {
				fields = append(fields, f)
			}
		}
	}
	sel := strings.Join(fields, ",")
	if _, err := labels.Parse(sel); err != nil {
		return "", fmt.Errorf("%q is not a label selector: %w", strings.Join(values, ","), err)
	}
	return sel, nil
}

// legacyTerm rewrites one of Reloader's legacy terms ("key:value", "key:*",
// "key=*") into selector syntax; any other term is returned as it is.
func legacyTerm(t string) string {
	if k, v, ok := strings.Cut(t, ":"); ok && !strings.ContainsAny(t, "=!() ") {
		if v == "*" {
			return k
		}
		return k + "=" + v
	}
	for _, op := range []struct{ op, exists string }{{"!=", "!"}, {"==", ""}, {"=", ""}} {
		if k, v, ok := strings.Cut(t, op.op); ok && strings.TrimSpace(v) == "*" {
			return op.exists + strings.TrimSpace(k)
		}
	}
	return t
}

// unquote drops one pair of q around s.
func unquote(s string, q byte) string {
	if len(s) >= 2 && s[0] == q && s[len(s)-1] == q {
		return s[1 : len(s)-1]
	}
	return s
}

// selectorValue is a pflag.Value for a selector flag: every occurrence of
// the flag adds to the selector, and *dst holds the selector ParseSelector
// makes of them all. A value that does not parse is kept in *dst as given,
// for Validate to report with the flag's name.
type selectorValue struct {
	dst    *string
	values []string
}

var _ pflag.Value = (*selectorValue)(nil)

func (s *selectorValue) Set(v string) error {
	s.values = append(s.values, v)
	sel, err := ParseSelector(s.values)
	if err != nil {
		sel = strings.Join(s.values, ",")
	}
	*s.dst = sel
	return nil
}

func (s *selectorValue) String() string { return *s.dst }

func (s *selectorValue) Type() string { return "selector" }
