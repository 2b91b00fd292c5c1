// Package monitoring holds nudge's dashboard and alerts to what nudge
// serves: every metric a dashboard query or an alert names is on /metrics of
// a running nudge, and the committed dashboard is what hack/dashboard
// generates.
package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/test/chart/charttest"
)

// TestDashboardIsGenerated: charts/nudge/files/dashboard.json is what
// hack/dashboard writes now (run `make dashboard`).
func TestDashboardIsGenerated(t *testing.T) {
	g := NewWithT(t)
	root := charttest.Root(t)
	out := filepath.Join(t.TempDir(), "dashboard.json")
	cmd := exec.Command("go", "run", ".", "-o", out)
	cmd.Dir = filepath.Join(root, "hack", "dashboard")
	b, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "running hack/dashboard:\n%s", b)
	generated, err := os.ReadFile(out)
	g.Expect(err).NotTo(HaveOccurred())
	committed, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(committed)).To(Equal(string(generated)),
		"charts/nudge/files/dashboard.json differs from what hack/dashboard writes: run make dashboard")
}

// TestQueriesNameServedMetrics: every metric the dashboard's queries and the
// alerts' expressions name is served on /metrics by a nudge with leader
// election, value bindings and waves on, after it rolled a workload and
// recorded a Warning; a query naming a metric nudge does not serve is
// caught.
func TestQueriesNameServedMetrics(t *testing.T) {
	served := scrape(t)

	dashboard, variables := dashboardQueries(t)
	tests := map[string]struct {
		exprs []string
		// unserved are the metric names the expressions name that nudge
		// does not serve.
		unserved []string
	}{
		"every query of the dashboard names metrics nudge serves":   {exprs: dashboard},
		"every expression of the alerts names metrics nudge serves": {exprs: alertExprs(t)},
		"a query with a misspelt metric is caught": {
			exprs:    []string{`sum by (kind) (rate(nudge_rollout_total{job=~".*"}[5m]))`},
			unserved: []string{"nudge_rollout_total"},
		},
		"a metric of another controller is caught, in an alert's join too": {
			exprs:    []string{`rate(certmanager_http_acme_client_request_count[5m]) and on (job, instance) nudge_build_info`},
			unserved: []string{"certmanager_http_acme_client_request_count"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.exprs).NotTo(BeEmpty())
			var unserved []string
			for i, names := range metricNames(t, tc.exprs) {
				g.Expect(names).NotTo(BeEmpty(), "%q names a metric", tc.exprs[i])
				for _, n := range names {
					if !served[n] {
						unserved = append(unserved, n)
					}
				}
			}
			g.Expect(unserved).To(ConsistOf(tc.unserved))
		})
	}
	t.Run("every metric of nudge's own is in docs/operations.md", func(t *testing.T) {
		g := NewWithT(t)
		doc, err := os.ReadFile(filepath.Join(charttest.Root(t), "docs", "operations.md"))
		g.Expect(err).NotTo(HaveOccurred())
		for name := range served {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if base != name && served[base] {
				continue // a histogram's or summary's series
			}
			if strings.HasPrefix(name, "nudge_") || strings.HasPrefix(name, "reloader_") {
				g.Expect(string(doc)).To(ContainSubstring("`"+name+"`"), "docs/operations.md documents %s", name)
			}
		}
	})
	t.Run("the dashboard's variables name metrics nudge serves", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(variables).NotTo(BeEmpty())
		for _, v := range variables {
			g.Expect(served).To(HaveKey(v), "a dashboard variable queries %s", v)
		}
	})
}

// scrape starts nudge on the test plane with metrics on 127.0.0.1, leader
// election, value bindings and waves on, has it roll a Deployment and record
// a Warning, and returns the names of the samples on its /metrics.
func scrape(t *testing.T) map[string]bool {
	t.Helper()
	g := NewWithT(t)
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(p.Config(), client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "crds", "nudge.dev_valuebindings.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(b, crd)).To(Succeed())
	nt.InstallCRD(t, c, crd)

	ctx := t.Context()
	ns, err := p.GenerateNamespace(ctx, "monitoring-")
	g.Expect(err).NotTo(HaveOccurred())
	ports, err := testbed.FreePorts(1)
	g.Expect(err).NotTo(HaveOccurred())
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	nt.Start(t, p.Config(), ns, func(o *options.Options) {
		o.MetricsAddr = addr
		o.LeaderElect = true
		o.ValueBindings = true
		o.ValueBindingTargets = []string{"Harbor.goharbor.io"}
		o.MaxConcurrentRollouts = 1
	})

	// A Deployment rolled on a change, and one that needs a ConfigMap that
	// does not exist (a SourceMissing Warning).
	reload := map[string]string{"configmap.reloader.stakater.com/reload": "settings"}
	g.Expect(c.Create(ctx, nt.ConfigMap(ns, "settings", map[string]string{"mode": "a"}))).To(Succeed())
	g.Expect(c.Create(ctx, nt.Deployment(ns, "web", 1, reload, nt.EnvFrom("ConfigMap", "settings")))).To(Succeed())
	g.Expect(c.Create(ctx, nt.Deployment(ns, "needs", 1, map[string]string{"reloader.stakater.com/auto": "true"},
		nt.EnvFrom("ConfigMap", "absent")))).To(Succeed())

	url := "http://" + addr + "/metrics"
	var names map[string]bool
	get := func() map[string]bool {
		names = samples(url)
		return names
	}
	g.Eventually(get).WithTimeout(30*time.Second).Should(HaveKey("nudge_warnings_total"),
		"nudge recorded the SourceMissing Warning (on %s)", url)
	// Changes of the ConfigMap until nudge rolls web (a change before it
	// saw web is its baseline).
	g.Eventually(func(g Gomega) {
		var cm corev1.ConfigMap
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &cm)).To(Succeed())
		cm.Data["mode"] = time.Now().String()
		g.Expect(c.Update(ctx, &cm)).To(Succeed())
		g.Eventually(get).WithTimeout(5 * time.Second).Should(HaveKey("nudge_rollouts_total"))
	}).WithTimeout(60*time.Second).Should(Succeed(), "nudge rolled the Deployment web on a change of its ConfigMap")
	// The rollout's latency is observed a moment after its count.
	g.Eventually(get).WithTimeout(30*time.Second).Should(HaveKey("nudge_rollout_latency_seconds_bucket"),
		"nudge observed the rollout's latency")
	g.Expect(names).To(HaveKey("leader_election_master_status"), "served with leader election on")
	return names
}

// samples returns the names of the samples on the /metrics of url ("_bucket",
// "_sum", "_count" for histograms and summaries); none when it cannot read
// them.
func samples(url string) map[string]bool {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for name, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		names[name] = true
		switch f.GetType().String() {
		case "HISTOGRAM", "GAUGE_HISTOGRAM":
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case "SUMMARY":
			names[name+"_sum"], names[name+"_count"] = true, true
		}
	}
	return names
}

// grafana replaces the dashboard's variables in a query by values PromQL
// parses.
var grafana = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$job", ".*")

// labelValues is a Grafana variable's query of label values of a metric.
var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),`)

// dashboardQueries returns the query of every panel of the chart's dashboard
// (variables replaced), and the metrics its variables query.
func dashboardQueries(t *testing.T) (exprs, variables []string) {
	t.Helper()
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	g.Expect(json.Unmarshal(b, &d)).To(Succeed())
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			g.Expect(json.Unmarshal(r, &p)).To(Succeed())
			for _, target := range p.Targets {
				g.Expect(target.Expr).NotTo(BeEmpty(), "panel %q has a query", p.Title)
				exprs = append(exprs, grafana.Replace(target.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := labelValues.FindStringSubmatch(q)
		g.Expect(m).NotTo(BeNil(), "variable query %q is label_values(metric, label)", q)
		variables = append(variables, m[1])
	}
	return exprs, variables
}

// alertExprs returns the expression of every alert of the chart's rules.
func alertExprs(t *testing.T) []string {
	t.Helper()
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "alerts.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	g.Expect(yaml.Unmarshal(b, &rules)).To(Succeed())
	var exprs []string
	for _, grp := range rules.Groups {
		for _, r := range grp.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}

// metricNames returns, for each expression, the metric names it selects,
// parsed by Prometheus's PromQL parser: hack/promtool/promqlnames, run from
// the module that pins promtool (github.com/prometheus/prometheus is not a
// dependency of nudge's own module).
func metricNames(t *testing.T, exprs []string) [][]string {
	t.Helper()
	g := NewWithT(t)
	in, err := json.Marshal(exprs)
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command("go", "run", "./promqlnames")
	cmd.Dir = filepath.Join(charttest.Root(t), "hack", "promtool")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "promqlnames: %s", stderr.String())
	var names [][]string
	g.Expect(json.Unmarshal(out, &names)).To(Succeed())
	g.Expect(names).To(HaveLen(len(exprs)))
	for i := range names {
		slices.Sort(names[i])
	}
	return names
}
