package settings

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
