package settings

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/options"
)

// TestArgsRoundTrip: the flags Args publishes give back, through Parse,
// every setting that changes a decision; defaults are left out, and
// secrets and paths of nudge's pod are never published.
func TestArgsRoundTrip(t *testing.T) {
	tests := map[string]struct {
		mutate   func(*options.Options)
		wantArgs []string
	}{
		"the defaults publish nothing": {
			mutate:   func(*options.Options) {},
			wantArgs: nil,
		},
		"decision settings round-trip": {
			mutate: func(o *options.Options) {
				o.SystemNamespace = "nudge-system"
				o.AutoReloadAll = true
				o.RolloutWindow = 0
				o.MaxConcurrentRollouts = 5
				o.Namespaces = []string{"shop", "blog"}
				o.NamespaceSelector = "team=a,tier!=dev"
				o.ResourceLabelSelector = "reload=yes"
				o.ResourcesToIgnore = []string{"secrets"}
				o.IgnoredWorkloadTypes = []string{"jobs", "cronjobs"}
				o.Reloader.Annotations.Auto = "example.com/auto"
			},
			wantArgs: []string{
				"--auto-annotation=example.com/auto",
				"--auto-reload-all=true",
				"--ignored-workload-types=[jobs,cronjobs]",
				"--max-concurrent-rollouts=5",
				"--namespace-selector=team=a,tier!=dev",
				"--namespaces=[shop,blog]",
				"--resource-label-selector=reload=yes",
				"--resources-to-ignore=[secrets]",
				"--rollout-window=0s",
				"--system-namespace=nudge-system",
			},
		},
		"the storm brake, the maintenance window (with its blanks) and the producer gate round-trip": {
			mutate: func(o *options.Options) {
				o.MaxRolloutsPerHour = 0
				o.MaintenanceWindow = "0 2 * * 1-5 2h Europe/Berlin"
				o.ProducerReadyTimeout = 30 * time.Second
			},
			wantArgs: []string{
				"--maintenance-window=0 2 * * 1-5 2h Europe/Berlin",
				"--max-rollouts-per-hour=0",
				"--producer-ready-timeout=30s",
			},
		},
		"a webhook URL, a kubeconfig and bind addresses are not published": {
			mutate: func(o *options.Options) {
				o.WebhookURL = "https://hooks.example/T000/B000/s3cr3t"
				o.Kubeconfig = "/home/me/.kube/config"
				o.MetricsAddr = "127.0.0.1:9999"
				o.CustomKindsFile = "/etc/nudge/kinds.yaml"
			},
			wantArgs: nil,
		},
		"a shard is each pod's own: not published": {
			mutate:   func(o *options.Options) { o.Shard = "1/3" },
			wantArgs: nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := options.Default()
			tc.mutate(&o)
			args := Args(o)
			g.Expect(args).To(Equal(tc.wantArgs))
			back, err := Parse(args)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(Args(back)).To(Equal(args), "parsed back, the same flags")
			g.Expect(back.AutoReloadAll).To(Equal(o.AutoReloadAll))
			g.Expect(back.Namespaces).To(Equal(o.Namespaces))
			g.Expect(back.NamespaceSelector).To(Equal(o.NamespaceSelector))
			g.Expect(back.Reloader.Annotations).To(Equal(o.Reloader.Annotations))
			g.Expect(back.WebhookURL).To(BeEmpty())
		})
	}
}

// unpublished are the flags Args must leave out, each with why.
var unpublished = map[string]string{
	"webhook-url":                    "its URL may carry a token",
	"alert-webhook-url":              "a Slack, Teams or GChat URL carries a token",
	"alert-proxy":                    "a proxy URL may carry a user and password",
	"alert-additional-info":          "free text: it may hold anything",
	"kubeconfig":                     "a path inside nudge's pod",
	"custom-kinds-file":              "a path inside nudge's pod",
	"admission-webhook-cert-dir":     "a path inside nudge's pod",
	"metrics-bind-address":           "an address inside nudge's pod",
	"metrics-addr":                   "an address inside nudge's pod",
	"health-probe-bind-address":      "an address inside nudge's pod",
	"health-addr":                    "an address inside nudge's pod",
	"pprof-bind-address":             "an address inside nudge's pod",
	"pprof-addr":                     "an address inside nudge's pod",
	"admission-webhook-bind-address": "an address inside nudge's pod",
	"shard":                          "each pod's own: every shard publishes to one ConfigMap",
}

// TestEveryFlagIsClassified walks every flag nudge has: each is either
// published or named above with why it is not, so that a new flag is
// published only by a choice; and an unpublished flag set to any value
// leaves no trace in Args.
func TestEveryFlagIsClassified(t *testing.T) {
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		t.Run(f.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, private := unpublished[f.Name]
			g.Expect(published[f.Name] != private).To(BeTrue(),
				"--%s must be either published (settings.published) or unpublished with a reason (this test's unpublished)", f.Name)
			if !private {
				return
			}
			o := options.Default()
			fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
			o.BindFlags(fs)
			g.Expect(fs.Set(f.Name, "https://u:pw@example.invalid/T0KEN")).To(Succeed())
			g.Expect(strings.Join(Args(o), "\n")).NotTo(Or(ContainSubstring("T0KEN"), ContainSubstring("--"+f.Name+"=")))
		})
	})
	for name := range published {
		NewWithT(t).Expect(fs.Lookup(name)).NotTo(BeNil(), "published names a flag nudge has: --%s", name)
	}
}

// The settings ConfigMap of a nudge with an alert sink holds neither the
// sink's token nor its proxy's password.
func TestConfigMapHoldsNoAlertCredential(t *testing.T) {
	g := NewWithT(t)
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--alert-webhook-url=https://hooks.example/T0KEN", "--alert-proxy=http://u:pw@proxy:3128",
		"--alert-sink=slack"})).To(Succeed())
	cm := ConfigMap("nudge-system", "nudge-settings", "v1.2.3", o)
	g.Expect(cm.Data[ArgsKey]).To(Equal("--alert-sink=slack"))
	for _, v := range cm.Data {
		g.Expect(v).NotTo(Or(ContainSubstring("T0KEN"), ContainSubstring("pw@"), ContainSubstring("proxy")))
	}
}

func TestParseRefusesUnknownFlags(t *testing.T) {
	_, err := Parse([]string{"--rollout-window=1s", "--from-the-future=x"})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("--from-the-future")))
}

func TestConfigMapSaysNotifyOnly(t *testing.T) {
	g := NewWithT(t)
	o := options.Default()
	o.WebhookURL = "https://hooks.example/s3cr3t"
	o.RolloutWindow = time.Second
	cm := ConfigMap("nudge-system", "nudge-settings", "v1.2.3", o)
	g.Expect(cm.Labels).To(Equal(map[string]string{NameLabel: "nudge", ComponentLabel: Component}))
	g.Expect(cm.Data).To(Equal(map[string]string{VersionKey: "v1.2.3", ArgsKey: "--rollout-window=1s", NotifyOnlyKey: "true"}))
	for _, v := range cm.Data {
		g.Expect(v).NotTo(ContainSubstring("s3cr3t"))
	}
}

func TestWatches(t *testing.T) {
	tests := map[string]struct {
		mutate func(*options.Options)
		labels labels.Set
		want   answer
	}{
		"every namespace":                        {mutate: func(*options.Options) {}, want: yes},
		"listed":                                 {mutate: func(o *options.Options) { o.Namespaces = []string{"shop"} }, want: yes},
		"not listed":                             {mutate: func(o *options.Options) { o.Namespaces = []string{"blog"} }, want: no},
		"ignored":                                {mutate: func(o *options.Options) { o.NamespacesToIgnore = []string{"shop"} }, want: no},
		"selected by its labels":                 {mutate: func(o *options.Options) { o.NamespaceSelector = "team=a" }, labels: labels.Set{"team": "a"}, want: yes},
		"not selected by its labels":             {mutate: func(o *options.Options) { o.NamespaceSelector = "team=a" }, labels: labels.Set{"team": "b"}, want: no},
		"a selector, labels unknown: maybe":      {mutate: func(o *options.Options) { o.NamespaceSelector = "team=a" }, want: maybe},
		"listed, then selected: both must agree": {mutate: func(o *options.Options) { o.Namespaces = []string{"shop"}; o.NamespaceSelector = "team=a" }, labels: labels.Set{"team": "b"}, want: no},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := options.Default()
			tc.mutate(&o)
			NewWithT(t).Expect(watches(o, "shop", tc.labels)).To(Equal(tc.want))
		})
	}
}
