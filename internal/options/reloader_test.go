package options_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"nudge.dev/nudge/internal/options"
)

// reloaderFlags is every flag Stakater Reloader accepts, v1 and current:
//   - v1: util.ConfigureReloaderFlags,
//     https://github.com/stakater/Reloader/blob/v1.4.5/internal/pkg/util/util.go
//   - current: flags.BindFlags,
//     https://github.com/stakater/Reloader/blob/master/internal/pkg/config/flags/flags.go
//
// A Reloader Deployment's args must start nudge, so every one of them is a
// nudge flag.
var reloaderFlags = []string{
	// v1 and current
	"auto-reload-all", "reload-strategy", "is-Argo-Rollouts", "reload-on-create", "reload-on-delete",
	"sync-after-restart", "enable-ha", "webhook-url", "resources-to-ignore", "ignored-workload-types",
	"namespaces-to-ignore", "namespace-selector", "resource-label-selector", "log-format", "log-level",
	"enable-pprof", "pprof-addr", "enable-csi-integration",
	"auto-annotation", "configmap-auto-annotation", "secret-auto-annotation", "configmap-annotation",
	"secret-annotation", "auto-search-annotation", "search-match-annotation",
	"pause-deployment-annotation", "pause-deployment-time-annotation",
	// current only
	"is-openshift", "leader-election-id", "leader-election-namespace", "leader-election-lease-duration",
	"leader-election-renew-deadline", "leader-election-retry-period", "leader-election-release-on-cancel",
	"metrics-addr", "health-addr", "ignore-annotation", "configmap-exclude-annotation", "secret-exclude-annotation",
	"secretproviderclass-auto-annotation", "secretproviderclass-annotation", "secretproviderclass-exclude-annotation",
	"namespaces", "alert-on-reload", "alert-webhook-url", "alert-sink", "alert-proxy", "alert-additional-info",
	"alert-structured",
}

func parse(g Gomega, args ...string) (options.Options, error) {
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse(args)).To(Succeed(), "nudge takes %v", args)
	return o, o.Validate()
}

// TestReloaderFlagList: nudge has every flag Reloader has.
func TestReloaderFlagList(t *testing.T) {
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	for _, name := range reloaderFlags {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(fs.Lookup(name)).NotTo(BeNil(), "Reloader's --%s", name)
		})
	}
}

// TestReloaderFlagMeanings: Reloader's flags, in the value forms Reloader
// takes, keep their meanings.
func TestReloaderFlagMeanings(t *testing.T) {
	tests := map[string]struct {
		args    []string
		check   func(g Gomega, o options.Options)
		wantErr string
	}{
		"the annotation-name flags rename what nudge reads": {
			args: []string{"--auto-annotation=acme.io/auto", "--configmap-auto-annotation=acme.io/cm-auto",
				"--secret-auto-annotation=acme.io/s-auto", "--configmap-annotation", "acme.io/cm",
				"--secret-annotation", "acme.io/s", "--configmap-exclude-annotation=acme.io/cm-x",
				"--secret-exclude-annotation=acme.io/s-x", "--auto-search-annotation=acme.io/search",
				"--search-match-annotation=acme.io/match", "--ignore-annotation=acme.io/ignore",
				"--pause-deployment-annotation=acme.io/pause", "--pause-deployment-time-annotation=acme.io/paused"},
			check: func(g Gomega, o options.Options) {
				a := o.Reloader.Annotations
				g.Expect([]string{a.Auto, a.ConfigMapAuto, a.SecretAuto, a.ConfigMapReload, a.SecretReload,
					a.ConfigMapExclude, a.SecretExclude, a.Search, a.Match, a.Ignore, a.PausePeriod, a.PausedAt}).To(Equal([]string{
					"acme.io/auto", "acme.io/cm-auto", "acme.io/s-auto", "acme.io/cm", "acme.io/s", "acme.io/cm-x",
					"acme.io/s-x", "acme.io/search", "acme.io/match", "acme.io/ignore", "acme.io/pause", "acme.io/paused"}))
			},
		},
		"the annotation names default to Reloader's": {
			check: func(g Gomega, o options.Options) {
				g.Expect(o.Reloader.Annotations.Auto).To(Equal("reloader.stakater.com/auto"))
				g.Expect(o.Reloader.Annotations.PausePeriod).To(Equal("deployment.reloader.stakater.com/pause-period"))
			},
		},
		"an annotation name that is not one is refused": {
			args:    []string{"--auto-annotation=not an annotation"},
			wantErr: "--auto-annotation",
		},
		"--is-Argo-Rollouts=true handles Rollouts": {
			args:  []string{"--is-Argo-Rollouts=true"},
			check: func(g Gomega, o options.Options) { g.Expect(o.Ignores("rollouts")).To(BeFalse()) },
		},
		"--is-Argo-Rollouts=false leaves Rollouts alone": {
			args: []string{"--is-Argo-Rollouts=false"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.Ignores("rollouts")).To(BeTrue())
				g.Expect(o.Ignores("deployments")).To(BeFalse())
			},
		},
		"--enable-pprof serves pprof on --pprof-addr": {
			args:  []string{"--enable-pprof", "--pprof-addr=:6061"},
			check: func(g Gomega, o options.Options) { g.Expect(o.PprofBindAddress()).To(Equal(":6061")) },
		},
		"--enable-pprof alone serves pprof on Reloader's :6060": {
			args:  []string{"--enable-pprof=true"},
			check: func(g Gomega, o options.Options) { g.Expect(o.PprofBindAddress()).To(Equal(":6060")) },
		},
		"pprof is off by default": {
			check: func(g Gomega, o options.Options) { g.Expect(o.PprofBindAddress()).To(Equal("0")) },
		},
		"--pprof-bind-address wins over --pprof-addr": {
			args:  []string{"--enable-pprof", "--pprof-bind-address=127.0.0.1:7000"},
			check: func(g Gomega, o options.Options) { g.Expect(o.PprofBindAddress()).To(Equal("127.0.0.1:7000")) },
		},
		"the leader-election timings are taken": {
			args: []string{"--enable-ha", "--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s",
				"--leader-election-retry-period=5s", "--leader-election-namespace=ops", "--leader-election-release-on-cancel=false"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.LeaderElect).To(BeTrue())
				g.Expect([]time.Duration{o.Reloader.LeaseDuration, o.Reloader.RenewDeadline, o.Reloader.RetryPeriod}).To(
					Equal([]time.Duration{30 * time.Second, 20 * time.Second, 5 * time.Second}))
				g.Expect(o.LeaseNamespace()).To(Equal("ops"))
				g.Expect(o.Reloader.ReleaseOnCancel).To(BeFalse())
			},
		},
		"the Lease is in the system namespace by default": {
			args:  []string{"--system-namespace=nudge"},
			check: func(g Gomega, o options.Options) { g.Expect(o.LeaseNamespace()).To(Equal("nudge")) },
		},
		"a renew deadline as long as the lease is refused": {
			args:    []string{"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=10s"},
			wantErr: "must be longer than --leader-election-renew-deadline",
		},
		"a retry period too close to the renew deadline is refused": {
			args:    []string{"--leader-election-renew-deadline=2s", "--leader-election-retry-period=2s"},
			wantErr: "1.2 × --leader-election-retry-period",
		},
		"--metrics-addr and --health-addr are Reloader's names for the bind addresses": {
			args: []string{"--metrics-addr=:9091", "--health-addr=:8082"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.MetricsAddr).To(Equal(":9091"))
				g.Expect(o.ProbeAddr).To(Equal(":8082"))
			},
		},
		"the flags nudge makes moot are accepted": {
			args: []string{"--sync-after-restart=true", "--enable-csi-integration=true", "--is-openshift=auto"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.Reloader.SyncAfterRestart && o.Reloader.EnableCSIIntegration).To(BeTrue())
			},
		},
		"an unknown --is-openshift is refused": {
			args:    []string{"--is-openshift=maybe"},
			wantErr: "--is-openshift",
		},
		"Reloader's string booleans take =true and =false": {
			args: []string{"--reload-on-create=true", "--reload-on-delete=false", "--auto-reload-all=true"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.ReloadOnCreate).To(BeTrue())
				g.Expect(o.ReloadOnDelete).To(BeFalse())
				g.Expect(o.AutoReloadAll).To(BeTrue())
			},
		},
		"Reloader's empty --log-format is text": {
			args:  []string{"--log-format="},
			check: func(g Gomega, o options.Options) { g.Expect(o.LogFormat).To(BeEmpty()) },
		},
		"a bad --alert-on-reload is refused": {
			args:    []string{"--alert-on-reload=maybe"},
			wantErr: "--alert-on-reload",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := parse(g, tc.args...)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, o)
		})
	}
}

// TestReloaderDeploymentArgs: the args of a Reloader Deployment rendered by
// Reloader's chart with most values set start nudge.
func TestReloaderDeploymentArgs(t *testing.T) {
	g := NewWithT(t)
	args := []string{
		"--log-format=json", "--resources-to-ignore=secrets", "--namespaces-to-ignore=kube-system,kube-public",
		`--namespace-selector="reloader=enabled,env in (prod,staging)"`, "--resource-label-selector=reload:true",
		"--configmap-annotation", "acme.io/configmaps", "--secret-annotation", "acme.io/secrets",
		"--auto-annotation", "acme.io/auto", "--secret-auto-annotation", "acme.io/secret-auto",
		"--configmap-auto-annotation", "acme.io/cm-auto", "--auto-search-annotation", "acme.io/search",
		"--search-match-annotation", "acme.io/match", "--pause-deployment-annotation", "acme.io/pause",
		"--pause-deployment-time-annotation", "acme.io/paused-at", "--webhook-url", "https://hooks.example/reload",
		"--is-Argo-Rollouts=true", "--reload-on-create=true", "--reload-on-delete=true", "--sync-after-restart=true",
		"--reload-strategy=annotations", "--enable-ha=true", "--auto-reload-all=true", "--enable-pprof",
		"--pprof-addr=:6060", "--enable-csi-integration=true", "--ignored-workload-types=jobs,cronjobs",
		"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=2s",
		"--log-level=debug",
	}
	o, err := parse(g, args...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.NamespaceSelector).To(Equal("reloader=enabled,env in (prod,staging)"))
	g.Expect(o.ResourceLabelSelector).To(Equal("reload=true"))
	g.Expect(o.Reloader.Annotations.Auto).To(Equal("acme.io/auto"))
	g.Expect(o.IgnoresSources("Secret")).To(BeTrue())
	g.Expect(o.Ignores("cronjobs") && o.Ignores("jobs")).To(BeTrue())
	g.Expect(strings.Join(o.NamespacesToIgnore, ",")).To(Equal("kube-system,kube-public"))
}

// TestAlertFlags: Reloader's --alert-* flags stand for its ALERT_*
// variables, over the environment's.
func TestAlertFlags(t *testing.T) {
	env := map[string]string{"ALERT_ON_RELOAD": "false", "ALERT_SINK": "slack", "ALERT_ADDITIONAL_INFO": "from env"}
	getenv := func(k string) string { return env[k] }
	tests := map[string]struct {
		args []string
		want map[string]string
	}{
		"no flag: the environment": {
			want: map[string]string{"ALERT_ON_RELOAD": "false", "ALERT_SINK": "slack", "ALERT_ADDITIONAL_INFO": "from env", "ALERT_WEBHOOK_URL": ""},
		},
		"a webhook URL turns alerts on": {
			args: []string{"--alert-webhook-url=https://hooks.example/x"},
			want: map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x"},
		},
		"--alert-on-reload alone means true": {
			args: []string{"--alert-on-reload"},
			want: map[string]string{"ALERT_ON_RELOAD": "true"},
		},
		"flags override the environment": {
			args: []string{"--alert-sink=teams", "--alert-additional-info=cluster a", "--alert-proxy=http://proxy:3128"},
			want: map[string]string{"ALERT_SINK": "teams", "ALERT_ADDITIONAL_INFO": "cluster a", "ALERT_WEBHOOK_PROXY": "http://proxy:3128"},
		},
		"--alert-structured makes the raw sink json": {
			args: []string{"--alert-sink=raw", "--alert-structured"},
			want: map[string]string{"ALERT_SINK": "json"},
		},
		"--alert-structured leaves another sink alone": {
			args: []string{"--alert-structured=true"},
			want: map[string]string{"ALERT_SINK": "slack"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := parse(g, tc.args...)
			g.Expect(err).NotTo(HaveOccurred())
			lookup := o.AlertEnv(getenv)
			for k, v := range tc.want {
				g.Expect(lookup(k)).To(Equal(v), k)
			}
		})
	}
}

// TestJoinBoolArgs: Reloader's string booleans written with a space before
// their value still set the flag.
func TestJoinBoolArgs(t *testing.T) {
	tests := map[string]struct {
		args, want []string
	}{
		"a boolean and its value after a space are joined": {
			args: []string{"--reload-on-create", "true", "--is-Argo-Rollouts", "false"},
			want: []string{"--reload-on-create=true", "--is-Argo-Rollouts=false"},
		},
		"a boolean alone stays alone": {
			args: []string{"--reload-on-create", "--auto-reload-all"},
			want: []string{"--reload-on-create", "--auto-reload-all"},
		},
		"a boolean before a non-boolean argument is not joined": {
			args: []string{"--enable-ha", "--log-level", "debug"},
			want: []string{"--enable-ha", "--log-level", "debug"},
		},
		"a string flag's value is not touched": {
			args: []string{"--log-format", "true"},
			want: []string{"--log-format", "true"},
		},
		"a boolean written with = is not touched": {
			args: []string{"--reload-on-delete=true", "false"},
			want: []string{"--reload-on-delete=true", "false"},
		},
		"nothing after -- is touched": {
			args: []string{"--", "--enable-ha", "true"},
			want: []string{"--", "--enable-ha", "true"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := options.Default()
			fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
			o.BindFlags(fs)
			g.Expect(options.JoinBoolArgs(fs, tc.args)).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse(options.JoinBoolArgs(fs, []string{"--reload-on-create", "true", "--is-Argo-Rollouts", "false"}))).To(Succeed())
	g.Expect(fs.Args()).To(BeEmpty())
	g.Expect(o.ReloadOnCreate).To(BeTrue())
	g.Expect(o.Ignores("rollouts")).To(BeTrue())
}
