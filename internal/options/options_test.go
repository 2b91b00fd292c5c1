package options_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"nudge.dev/nudge/internal/options"
)

func TestFlags(t *testing.T) {
	tests := map[string]struct {
		args    []string
		check   func(g Gomega, o options.Options)
		wantErr string
	}{
		"the defaults are valid": {
			check: func(g Gomega, o options.Options) {
				g.Expect(o.RolloutWindow).To(Equal(5 * time.Second))
				g.Expect(o.LeaderElect).To(BeFalse())
			},
		},
		"Reloader's --enable-ha turns on leader election": {
			args:  []string{"--enable-ha"},
			check: func(g Gomega, o options.Options) { g.Expect(o.LeaderElect).To(BeTrue()) },
		},
		"--namespaces takes a comma list": {
			args:  []string{"--namespaces=a,b"},
			check: func(g Gomega, o options.Options) { g.Expect(o.Namespaces).To(Equal([]string{"a", "b"})) },
		},
		"an unknown log format is refused": {
			args:    []string{"--log-format=xml"},
			wantErr: `--log-format must be "text" or "json", got "xml"`,
		},
		"an unknown log level is refused": {
			args:    []string{"--log-level=loud"},
			wantErr: `--log-level must be one of`,
		},
		"a negative window is refused": {
			args:    []string{"--rollout-window=-1s"},
			wantErr: "--rollout-window must not be negative",
		},
		"zero workers are refused": {
			args:    []string{"--workers=0"},
			wantErr: "--workers must be at least 1",
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
			tc.check(g, o)
		})
	}
}
