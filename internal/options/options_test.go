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
		"Reloader's flags keep their names and meanings": {
			args: []string{"--auto-reload-all", "--reload-strategy=env-vars", "--namespaces-to-ignore=kube-system",
				"--namespace-selector=team=a", "--resource-label-selector=reload=yes", "--resources-to-ignore=configMaps",
				"--ignored-workload-types=jobs,cronjobs", "--reload-on-create", "--reload-on-delete", "--webhook-url=https://hooks.example/x"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.AutoReloadAll && o.ReloadOnCreate && o.ReloadOnDelete).To(BeTrue())
				g.Expect(o.ReloadStrategy).To(Equal("env-vars"))
				g.Expect(o.IgnoresSources("ConfigMap")).To(BeTrue())
				g.Expect(o.IgnoresSources("Secret")).To(BeFalse())
				g.Expect(o.Ignores("cronjobs")).To(BeTrue())
				g.Expect(o.Ignores("deployments")).To(BeFalse())
			},
		},
		"an unknown strategy is refused": {
			args:    []string{"--reload-strategy=rolling"},
			wantErr: "--reload-strategy must be",
		},
		"a malformed selector is refused": {
			args:    []string{"--namespace-selector=a in (b"},
			wantErr: "--namespace-selector",
		},
		"an unknown source kind to ignore is refused": {
			args:    []string{"--resources-to-ignore=pods"},
			wantErr: "--resources-to-ignore",
		},
		"an unknown workload type to ignore is refused": {
			args:    []string{"--ignored-workload-types=pods"},
			wantErr: "--ignored-workload-types",
		},
		"a webhook URL must be http or https": {
			args:    []string{"--webhook-url=ftp://x"},
			wantErr: "--webhook-url",
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
