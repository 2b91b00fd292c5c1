package controller_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// renamed are Reloader's annotation names as its flags
// --auto-annotation=acme.io/auto ... set them.
func renamed(o *options.Options) {
	a := &o.Reloader.Annotations
	a.Auto, a.ConfigMapReload, a.Search, a.Match = "acme.io/auto", "acme.io/configmaps", "acme.io/search", "acme.io/match"
	a.Ignore, a.PausePeriod, a.PausedAt = "acme.io/ignore", "acme.io/pause-period", "acme.io/paused-at"
	o.RolloutWindow = 0
}

// TestRenamedReloaderAnnotations: with Reloader's annotation-name flags set,
// nudge reads the names they give, on workloads and on sources, and no
// longer Reloader's defaults, as Reloader does.
func TestRenamedReloaderAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string // "APP" stands for the ConfigMap's name
		source      map[string]string
		optedIn     bool
		wantRoll    bool
	}{
		{name: "the renamed auto annotation rolls",
			annotations: map[string]string{"acme.io/auto": "true"}, optedIn: true, wantRoll: true},
		{name: "Reloader's default auto annotation no longer opts in",
			annotations: map[string]string{dialect.ReloaderAuto: "true"}},
		{name: "the renamed reload list rolls",
			annotations: map[string]string{"acme.io/configmaps": "APP"}, optedIn: true, wantRoll: true},
		{name: "Reloader's default reload list no longer opts in",
			annotations: map[string]string{dialect.ReloaderConfigMapReload: "APP"}},
		{name: "the renamed search rolls for a source with the renamed match",
			annotations: map[string]string{"acme.io/search": "true"},
			source:      map[string]string{"acme.io/match": "true"}, optedIn: true, wantRoll: true},
		{name: "the renamed search does not roll for Reloader's default match",
			annotations: map[string]string{"acme.io/search": "true"},
			source:      map[string]string{dialect.ReloaderMatch: "true"}, optedIn: true},
		{name: "the renamed ignore on the source holds the rollout",
			annotations: map[string]string{"acme.io/auto": "true"},
			source:      map[string]string{"acme.io/ignore": "true"}, optedIn: true},
		{name: "Reloader's default ignore no longer does",
			annotations: map[string]string{"acme.io/auto": "true"},
			source:      map[string]string{dialect.ReloaderIgnore: "true"}, optedIn: true, wantRoll: true},
	}
	e := setup(t, true, renamed)
	web := func(i int) string { return fmt.Sprintf("web-%d", i) }
	app := func(i int) string { return fmt.Sprintf("app-%d", i) }
	for i, tc := range tests {
		annotations := map[string]string{}
		for k, v := range tc.annotations {
			annotations[k] = strings.ReplaceAll(v, "APP", app(i))
		}
		cm := nt.ConfigMap(e.NS, app(i), map[string]string{"a": "1"})
		cm.Annotations = tc.source
		e.Create(cm, nt.Deployment(e.NS, web(i), 1, annotations, nt.EnvFrom("ConfigMap", app(i))))
	}
	for i, tc := range tests {
		if tc.optedIn {
			e.Baselined(web(i))
		}
	}
	for i := range tests {
		e.UpdateConfigMap(app(i), func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.wantRoll {
				g.Eventually(e.Rollouts(web(i))).WithTimeout(20*time.Second).Should(Equal(int64(1)), "Deployment %s to roll once", web(i))
				return
			}
			g.Consistently(e.Rollouts(web(i))).WithTimeout(3*time.Second).Should(BeZero(), "Deployment %s not to roll", web(i))
			if !tc.optedIn {
				g.Expect(e.Deployment(web(i)).Annotations).NotTo(HaveKey(HavePrefix("nudge.dev/")), "nudge to leave Deployment %s alone", web(i))
			}
		})
	}
}

// TestRenamedPauseAnnotations: --pause-deployment-annotation and
// --pause-deployment-time-annotation rename the pause nudge reads and writes.
func TestRenamedPauseAnnotations(t *testing.T) {
	e := setup(t, true, renamed)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"acme.io/auto": "true", "acme.io/pause-period": "2s"},
			nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(func() bool { return e.Deployment("web").Spec.Paused }).WithTimeout(10*time.Second).Should(BeTrue(), "paused with the trigger")
	e.G.Expect(e.Deployment("web").Annotations).To(And(HaveKey("acme.io/paused-at"), Not(HaveKey(dialect.ReloaderPausedAt))))
	e.G.Eventually(func() bool { return e.Deployment("web").Spec.Paused }).WithTimeout(15*time.Second).Should(BeFalse(), "resumed after the period")
	e.G.Expect(e.Deployment("web").Annotations).NotTo(HaveKey("acme.io/paused-at"))
}

// TestReloaderMetrics: /metrics serves Reloader's counters beside nudge's,
// counted as Reloader counts them: success="false" for a rollout write the
// API server refuses, success="true" for each workload rolled, and by
// namespace with METRICS_COUNT_BY_NAMESPACE=enabled; and Reloader 1.4's
// other series nudge serves, with their types and label names, counting
// the rollout and the refused write.
func TestReloaderMetrics(t *testing.T) {
	addr := nt.FreeAddr(t)
	e := setup(t, true, func(o *options.Options) {
		o.MetricsAddr, o.MetricsByNamespace, o.RolloutWindow = addr, true, 0
	})
	series := func(name string, labels ...string) func() float64 {
		return func() float64 { return scrape(t, addr)[name+"{"+strings.Join(labels, ",")+"}"] }
	}
	byNS := func(success string) func() float64 {
		// The text format sorts labels by name.
		return series("reloader_reload_executed_total_by_namespace", `namespace="`+e.NS+`"`, `success="`+success+`"`)
	}
	e.G.Eventually(func() map[string]float64 { return scrape(t, addr) }).WithTimeout(20*time.Second).Should(
		And(HaveKey(`reloader_reload_executed_total{success="true"}`), HaveKey(`reloader_reload_executed_total{success="false"}`)),
		"both of Reloader's series, present from the start")

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.G.Expect(byNS("true")()).To(BeZero(), "a baseline is no reload")
	allow := e.refuseRollouts()
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(byNS("false")).WithTimeout(20*time.Second).Should(BeNumerically(">=", 1), "a refused rollout counted as failed")
	e.G.Expect(byNS("true")()).To(BeZero())
	allow()
	e.RolledTo("web", 1)
	e.G.Eventually(byNS("true")).WithTimeout(20*time.Second).Should(Equal(1.0), "one successful reload in the namespace")
	e.G.Expect(series("reloader_reload_executed_total", `success="true"`)()).To(BeNumerically(">=", 1))
	e.G.Expect(series("nudge_rollouts_total", `kind="Deployment"`)()).To(BeNumerically(">=", 1), "nudge's own counter beside")

	// The others (the registry is shared by the tests running in parallel:
	// at least this test's counts).
	e.G.Expect(scrapeTypes(t, addr)).To(And(
		HaveKeyWithValue("reloader_reload_executed_total", "counter"),
		HaveKeyWithValue("reloader_reload_executed_total_by_namespace", "counter"),
		HaveKeyWithValue("reloader_action_total", "counter"),
		HaveKeyWithValue("reloader_action_latency_seconds", "histogram"),
		HaveKeyWithValue("reloader_reconcile_total", "counter"),
		HaveKeyWithValue("reloader_reconcile_duration_seconds", "histogram"),
		HaveKeyWithValue("reloader_retries_total", "counter"),
		HaveKeyWithValue("reloader_workloads_matched_total", "counter"),
	), "Reloader's series with Reloader's types")
	e.G.Expect(series("reloader_action_total", `result="success"`, `workload_kind="Deployment"`)()).To(BeNumerically(">=", 1))
	e.G.Expect(series("reloader_action_total", `result="error"`, `workload_kind="Deployment"`)()).To(BeNumerically(">=", 1), "the refused write")
	e.G.Expect(series("reloader_action_latency_seconds_count", `workload_kind="Deployment"`)()).To(BeNumerically(">=", 1))
	e.G.Expect(series("reloader_workloads_matched_total", `kind="Deployment"`)()).To(BeNumerically(">=", 2), "decided to roll twice: refused, then written")
	e.G.Expect(series("reloader_reconcile_total", `result="success"`)()).To(BeNumerically(">=", 1))
	e.G.Expect(series("reloader_reconcile_total", `result="error"`)()).To(BeNumerically(">=", 1), "the reconcile of the refused write")
	e.G.Expect(series("reloader_reconcile_duration_seconds_count", `result="success"`)()).To(BeNumerically(">=", 1))
	e.G.Expect(scrape(t, addr)["reloader_retries_total"]).To(BeNumerically(">=", 1), "the refused write retried")
}

// scrapeTypes returns the type of each metric family the metrics endpoint
// at addr serves, from its "# TYPE" lines.
func scrapeTypes(t *testing.T, addr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// refuseRollouts makes the API server refuse writes of nudge's trigger on
// the Deployments of e's namespace; the func it returns lifts the refusal
// once it is lifted.
func (e *env) refuseRollouts() (allow func()) {
	e.T.Helper()
	return e.Refuse("refuse-rollouts-"+e.NS, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}, `!has(object.spec.template.metadata.annotations) || !('nudge.dev/restarted-at' in object.spec.template.metadata.annotations)`,
		"no rollout here (test)", func() error {
			d := nt.Deployment(e.NS, "admission-probe", 1, nil)
			d.Spec.Template.Annotations = map[string]string{"nudge.dev/restarted-at": "probe"}
			return suite.K8s.Create(e.Ctx, d, client.DryRunAll)
		})
}

// scrape returns the samples of the metrics endpoint at addr, keyed by
// series as the text format writes it (name{label="value",...}); nil when
// it does not answer.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}
