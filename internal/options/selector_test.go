package options_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/options"
)

// TestParseSelector: the value forms Reloader's --namespace-selector and
// --resource-label-selector take, each giving the selector Reloader builds.
func TestParseSelector(t *testing.T) {
	tests := map[string]struct {
		values  []string
		want    string
		wantErr string
	}{
		"no value is no selector":                         {values: nil, want: ""},
		"an empty value is no selector":                   {values: []string{""}, want: ""},
		"an equality":                                     {values: []string{"team=a"}, want: "team=a"},
		"a comma list ANDs its terms":                     {values: []string{"team=a,tier!=dev"}, want: "team=a,tier!=dev"},
		"repeated flags AND their values":                 {values: []string{"team=a", "tier=web"}, want: "team=a,tier=web"},
		"a set-based term keeps its parenthesised commas": {values: []string{"env in (prod,staging)"}, want: "env in (prod,staging)"},
		"set-based and plain terms mix":                   {values: []string{"env in (prod,staging),team=a"}, want: "env in (prod,staging),team=a"},
		"existence and non-existence":                     {values: []string{"reload,!skip"}, want: "reload,!skip"},
		"Reloader's legacy key:value is key=value":        {values: []string{"team:a"}, want: "team=a"},
		"Reloader's legacy key:* is key exists":           {values: []string{"team:*"}, want: "team"},
		"Reloader's key=* is key exists":                  {values: []string{"team=*"}, want: "team"},
		"key==* is key exists too":                        {values: []string{"team==*"}, want: "team"},
		"key!=* is key does not exist":                    {values: []string{"team!=*"}, want: "!team"},
		"legacy terms in a list":                          {values: []string{"team:a,tier:*,env=prod"}, want: "team=a,tier,env=prod"},
		"a prefixed key keeps its slash":                  {values: []string{"example.com/team:a"}, want: "example.com/team=a"},
		"double quotes as Reloader's chart renders them":  {values: []string{`"team=a"`}, want: "team=a"},
		"double quotes around a set with commas":          {values: []string{`"env in (prod,staging)",team=a`}, want: "env in (prod,staging),team=a"},
		"single quotes as copied from a shell line":       {values: []string{"'env in (prod,staging)'"}, want: "env in (prod,staging)"},
		"spaces around terms are dropped":                 {values: []string{" team=a , tier=web "}, want: "team=a,tier=web"},
		"a malformed set is refused":                      {values: []string{"env in (prod"}, wantErr: "is not a label selector"},
		"an unterminated quote is refused":                {values: []string{`"team=a`}, wantErr: "comma-separated list"},
		"a value with a space in its key is refused":      {values: []string{"my team=a"}, wantErr: "is not a label selector"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := options.ParseSelector(tc.values)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			_, err = labels.Parse(got)
			g.Expect(err).NotTo(HaveOccurred(), "the result is Kubernetes selector syntax")
		})
	}
}

// TestSelectorFlags: the selector flags read every form through the flag
// set, and a malformed one is refused by Validate, naming the flag.
func TestSelectorFlags(t *testing.T) {
	tests := map[string]struct {
		args         []string
		namespace    string
		resource     string
		wantErr      string
		matches      labels.Set
		doesNotMatch labels.Set
	}{
		"the flag repeated": {
			args:      []string{"--namespace-selector=team:a", "--namespace-selector", "env in (prod,staging)"},
			namespace: "team=a,env in (prod,staging)",
			matches:   labels.Set{"team": "a", "env": "prod"}, doesNotMatch: labels.Set{"team": "a", "env": "dev"},
		},
		"Reloader's chart args, quotes included": {
			args:      []string{`--namespace-selector="reloader=enabled"`, `--resource-label-selector="reload:*"`},
			namespace: "reloader=enabled", resource: "reload",
			matches: labels.Set{"reloader": "enabled", "reload": "x"}, doesNotMatch: labels.Set{"reloader": "off"},
		},
		"a malformed namespace selector": {
			args:    []string{"--namespace-selector=a in (b"},
			wantErr: "--namespace-selector",
		},
		"a malformed resource selector": {
			args:    []string{"--resource-label-selector=a b=c"},
			wantErr: "--resource-label-selector",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := options.Default()
			fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
			o.BindFlags(fs)
			g.Expect(fs.Parse(tc.args)).To(Succeed())
			err := o.Validate()
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(o.NamespaceSelector).To(Equal(tc.namespace))
			g.Expect(o.ResourceLabelSelector).To(Equal(tc.resource))
			sel, err := labels.Parse(o.NamespaceSelector)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sel.Matches(tc.matches)).To(BeTrue())
			g.Expect(sel.Matches(tc.doesNotMatch)).To(BeFalse())
		})
	}
}
