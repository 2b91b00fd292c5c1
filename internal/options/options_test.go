package options_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
		"--event-reasons=reloader picks Reloader's reasons": {
			args:  []string{"--event-reasons=reloader"},
			check: func(g Gomega, o options.Options) { g.Expect(o.EventReasons).To(Equal("reloader")) },
		},
		"nudge's reasons by default": {
			check: func(g Gomega, o options.Options) { g.Expect(o.EventReasons).To(Equal("nudge")) },
		},
		"an unknown set of event reasons is refused": {
			args:    []string{"--event-reasons=flux"},
			wantErr: `--event-reasons must be "nudge" or "reloader", got "flux"`,
		},
		"cross-namespace references are allowed by default, as Wave reads them": {
			check: func(g Gomega, o options.Options) { g.Expect(o.DenyCrossNamespace()).To(BeFalse()) },
		},
		"--cross-namespace-references=deny refuses them": {
			args:  []string{"--cross-namespace-references=deny"},
			check: func(g Gomega, o options.Options) { g.Expect(o.DenyCrossNamespace()).To(BeTrue()) },
		},
		"an unknown cross-namespace policy is refused": {
			args:    []string{"--cross-namespace-references=audit"},
			wantErr: `--cross-namespace-references must be "allow" or "deny", got "audit"`,
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
		"value bindings are off by default and take kinds with their groups": {
			args: []string{"--value-bindings", "--value-binding-targets=Harbor.goharbor.io,ConfigMap"},
			check: func(g Gomega, o options.Options) {
				g.Expect(o.ValueBindings).To(BeTrue())
				gks, err := o.BindingTargets()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(gks).To(Equal([]schema.GroupKind{{Group: "goharbor.io", Kind: "Harbor"}, {Kind: "ConfigMap"}}))
			},
		},
		"an eviction kind that is not Kind.group is refused": {
			args:    []string{"--enable-eviction", "--evict-pods-of=Cluster"},
			wantErr: `--evict-pods-of: "Cluster" is not "Kind.group"`,
		},
		"--evict-pods-of without --enable-eviction is refused": {
			args:    []string{"--evict-pods-of=Cluster.postgresql.cnpg.io"},
			wantErr: "--evict-pods-of needs --enable-eviction",
		},
		"--evict-pods-of takes kinds with their groups": {
			args: []string{"--enable-eviction", "--evict-pods-of=Cluster.postgresql.cnpg.io,StatefulSet.apps"},
			check: func(g Gomega, o options.Options) {
				gks, err := o.EvictKinds()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(gks).To(Equal([]schema.GroupKind{{Group: "postgresql.cnpg.io", Kind: "Cluster"}, {Group: "apps", Kind: "StatefulSet"}}))
			},
		},
		"a binding target that is not Kind.group is refused": {
			args:    []string{"--value-binding-targets=harbors.goharbor.io"},
			wantErr: `--value-binding-targets: "harbors.goharbor.io" is not "Kind" or "Kind.group"`,
		},
		"a binding target whose group is not a DNS name is refused": {
			args:    []string{"--value-binding-targets=Harbor.Goharbor_io"},
			wantErr: "the group is not a DNS subdomain",
		},
		"the admission webhook is off by default and serves on :9443": {
			check: func(g Gomega, o options.Options) {
				g.Expect(o.AdmissionWebhook).To(BeFalse())
				host, port, err := o.AdmissionWebhookHostPort()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(host).To(BeEmpty())
				g.Expect(port).To(Equal(9443))
			},
		},
		"the admission webhook takes a host and port": {
			args: []string{"--admission-webhook", "--admission-webhook-bind-address=127.0.0.1:8443", "--admission-webhook-cert-dir=/certs"},
			check: func(g Gomega, o options.Options) {
				host, port, err := o.AdmissionWebhookHostPort()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(host).To(Equal("127.0.0.1"))
				g.Expect(port).To(Equal(8443))
				g.Expect(o.AdmissionWebhookCertDir).To(Equal("/certs"))
			},
		},
		"an admission webhook address without a port is refused": {
			args:    []string{"--admission-webhook", "--admission-webhook-bind-address=127.0.0.1"},
			wantErr: "--admission-webhook-bind-address must be host:port",
		},
		"an admission webhook on port 0 is refused": {
			args:    []string{"--admission-webhook", "--admission-webhook-bind-address=:0"},
			wantErr: "--admission-webhook-bind-address must be host:port",
		},
		"the storm brake, the producer gate and no maintenance window by default": {
			check: func(g Gomega, o options.Options) {
				g.Expect(o.MaxRolloutsPerHour).To(Equal(30))
				g.Expect(o.ProducerReadyTimeout).To(Equal(2 * time.Minute))
				w, err := o.Maintenance()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(w.IsZero()).To(BeTrue(), "no window: always open")
			},
		},
		"--max-rollouts-per-hour=0 takes the storm brake off": {
			args:  []string{"--max-rollouts-per-hour=0"},
			check: func(g Gomega, o options.Options) { g.Expect(o.MaxRolloutsPerHour).To(BeZero()) },
		},
		"a negative --max-rollouts-per-hour is refused": {
			args:    []string{"--max-rollouts-per-hour=-1"},
			wantErr: "--max-rollouts-per-hour must not be negative, got -1",
		},
		"--maintenance-window takes a schedule, a duration and a zone": {
			args: []string{"--maintenance-window=0 2 * * 1-5 2h Europe/Berlin"},
			check: func(g Gomega, o options.Options) {
				w, err := o.Maintenance()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(w.String()).To(Equal("0 2 * * 1-5 2h Europe/Berlin"))
				g.Expect(w.Open(time.Date(2025, 6, 6, 1, 0, 0, 0, time.UTC))).To(BeTrue(), "03:00 on a Friday in Berlin")
			},
		},
		"a maintenance window with a bad field is refused, naming the field": {
			args:    []string{"--maintenance-window=0 25 * * * 1h"},
			wantErr: `--maintenance-window: field 2 (hour) "25"`,
		},
		"a maintenance window in an unknown zone is refused, naming the zone": {
			args:    []string{"--maintenance-window=0 2 * * * 1h Mars/Olympus"},
			wantErr: `--maintenance-window: time zone "Mars/Olympus"`,
		},
		"a maintenance window of no duration is refused": {
			args:    []string{"--maintenance-window=0 2 * * * 0s"},
			wantErr: `--maintenance-window: duration "0s" is not positive`,
		},
		"--producer-ready-timeout=0 turns the producer gate off": {
			args:  []string{"--producer-ready-timeout=0"},
			check: func(g Gomega, o options.Options) { g.Expect(o.ProducerReadyTimeout).To(BeZero()) },
		},
		"a negative --producer-ready-timeout is refused": {
			args:    []string{"--producer-ready-timeout=-1s"},
			wantErr: "--producer-ready-timeout must not be negative, got -1s",
		},
		"zero workers are refused": {
			args:    []string{"--workers=0"},
			wantErr: "--workers must be at least 1",
		},
		"zero value-binding workers are refused": {
			args:    []string{"--value-binding-workers=0"},
			wantErr: "--value-binding-workers must be at least 1",
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

// TestReferenceFlagDefaults: the flag table of docs/reference.md gives
// every flag's default as nudge registers it (it once said 500 requests per second while nudge
// used 200).
func TestReferenceFlagDefaults(t *testing.T) {
	g := NewWithT(t)
	ref, err := os.ReadFile("../../docs/reference.md")
	g.Expect(err).NotTo(HaveOccurred())
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)

	row := regexp.MustCompile("^\\| (`--[^|]+) \\| ([^|]+) \\|")
	name := regexp.MustCompile("`--([a-zA-Z-]+)`")
	rows := 0
	for line := range strings.Lines(string(ref)) {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		flags := name.FindAllStringSubmatch(m[1], -1)
		values := strings.Split(strings.TrimSpace(m[2]), ", ")
		for i, f := range flags {
			flag := fs.Lookup(f[1])
			g.Expect(flag).NotTo(BeNil(), "docs/reference.md names --%s, which nudge does not have", f[1])
			want := readmeDefault(values[min(i, len(values)-1)])
			got := flag.DefValue
			if got == "[]" {
				got = ""
			}
			g.Expect(got).To(Equal(want), "--%s: docs/reference.md says %q", f[1], m[2])
		}
	}
	g.Expect(rows).To(BeNumerically(">", 20), "the flag table of docs/reference.md")
}

// readmeDefault reads a default as docs/reference.md writes it: "`5s`", "`0` (off)",
// "`$X` or `y`" (the last is the flag's own), or words for an empty value.
func readmeDefault(s string) string {
	s, _, _ = strings.Cut(s, " (")
	if _, after, ok := strings.Cut(s, " or "); ok {
		s = after
	}
	s = strings.Trim(s, "`")
	switch s {
	case "none", "all", "in-cluster", "where nudge runs":
		return ""
	}
	return s
}
