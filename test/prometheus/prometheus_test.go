package prometheus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// A wave halted by its canary's ProgressDeadlineExceeded (as TestStatus in
// cmd/nudge makes one) fires NudgeRolloutHalted, once its `for:` has
// elapsed, and NudgeRolloutFailed, labelled with nudge's namespace and job,
// and nothing else; every panel of the dashboard shows a series.
func TestPrometheusHaltedWaveFiresItsAlerts(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := namespace(t, "prom-halted-")
	rules, names := renderedRules(t)
	canary := nt.Deployment(ns, "canary", 1, map[string]string{"nudge.dev/auto": "true", fleet.PriorityAnnotation: "10"}, nt.EnvFrom("ConfigMap", "app"))
	for _, o := range []client.Object{
		nt.ConfigMap(ns, "app", map[string]string{"a": "1"}),
		canary,
		nt.Deployment(ns, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app")),
	} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	prom := startPrometheus(t, startNudge(t, ns), ns, rules)
	baselined(t, ns, "canary", "web")

	// The canary takes the one slot; its rollout misses its deadline, and
	// web, waiting on the same content, is halted.
	changeConfigMap(t, ns, "app")
	nt.HaltWave(t, k8s, canary, "web")

	// NudgeRolloutHalted is pending first, until its `for:` elapses: the
	// halted gauge holds across evaluations.
	g.Eventually(prom.alerts).WithTimeout(30*time.Second).Should(ContainElement(And(
		HaveField("Labels", HaveKeyWithValue("alertname", "NudgeRolloutHalted")), HaveField("State", "pending"))),
		"NudgeRolloutHalted pending for its for: of %s", forDuration)
	g.Eventually(prom.firing).WithTimeout(60*time.Second).Should(ConsistOf("NudgeRolloutHalted", "NudgeRolloutFailed"),
		"Prometheus to fire the alerts of a halted wave, and no other")
	firing, err := prom.alerts()
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range firing {
		g.Expect(a.Labels).To(And(HaveKeyWithValue("namespace", ns), HaveKeyWithValue("job", "nudge"), HaveKeyWithValue("severity", "warning")),
			"%s is labelled with nudge's namespace and job", a.Labels["alertname"])
	}
	evaluatedWithoutError(t, prom, names, time.Now())
	dashboardShowsSeries(t, prom, nil)
}

// A Secret a Deployment requires deleted fires NudgeSourceMissing, and
// nothing else.
func TestPrometheusMissingSecretFiresSourceMissing(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := namespace(t, "prom-missing-")
	rules, names := renderedRules(t)
	secret := nt.Secret(ns, "credentials", map[string]string{"password": "s3cret"})
	for _, o := range []client.Object{
		secret,
		nt.Deployment(ns, "api", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("Secret", "credentials")),
	} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	prom := startPrometheus(t, startNudge(t, ns), ns, rules)
	baselined(t, ns, "api")
	g.Consistently(prom.alerts).WithTimeout(2*interval).Should(BeEmpty(), "no alert while the Secret is there")

	g.Expect(k8s.Delete(ctx, secret)).To(Succeed())
	g.Eventually(prom.firing).WithTimeout(60*time.Second).Should(ConsistOf("NudgeSourceMissing"),
		"Prometheus to fire NudgeSourceMissing once the Secret is gone, and no other alert")
	all, err := prom.alerts()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(ConsistOf(HaveField("Labels", And(HaveKeyWithValue("namespace", ns), HaveKeyWithValue("job", "nudge"),
		HaveKeyWithValue("severity", "warning")))))
	evaluatedWithoutError(t, prom, names, time.Now())
}

// A healthy nudge that rolled a Deployment on a change fires no alert, none
// even pending, while every rule is evaluated for twice the rules' `for:`;
// every panel of the dashboard shows a series but the warnings', which
// shows what a healthy nudge has none of (the halted wave's test sees it
// show them).
func TestPrometheusHealthyNudgeFiresNoAlert(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := namespace(t, "prom-healthy-")
	rules, names := renderedRules(t)
	for _, o := range []client.Object{
		nt.ConfigMap(ns, "settings", map[string]string{"mode": "a"}),
		nt.Deployment(ns, "web", 1, map[string]string{"configmap.reloader.stakater.com/reload": "settings"}, nt.EnvFrom("ConfigMap", "settings")),
	} {
		g.Expect(k8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	prom := startPrometheus(t, startNudge(t, ns), ns, rules)
	baselined(t, ns, "web")
	changeConfigMap(t, ns, "settings")
	g.Eventually(func() ([]map[string]string, error) {
		return prom.series(`nudge_rollouts_total{job="nudge",kind="Deployment"} >= 1`)
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "Prometheus to scrape nudge's rollout of web")

	g.Consistently(prom.alerts).WithTimeout(2*mustDuration(t, forDuration)).Should(BeEmpty(),
		"no alert, firing or pending, from a healthy nudge")
	evaluatedWithoutError(t, prom, names, time.Now().Add(-2*mustDuration(t, forDuration)))
	dashboardShowsSeries(t, prom, map[string]string{
		"Warnings by reason": "a healthy nudge records no Warning",
	})
}

// baselined waits until nudge has recorded the applied state of each
// Deployment of ns named.
func baselined(t *testing.T, ns string, names ...string) {
	t.Helper()
	g := NewWithT(t)
	for _, name := range names {
		g.Eventually(func() string {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
			return d.Annotations[workload.AppliedAnnotation]
		}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", name)
	}
}

// changeConfigMap changes the data of the ConfigMap ns/name.
func changeConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		cm.Data = map[string]string{"changed": time.Now().Format(time.RFC3339Nano)}
		return k8s.Update(t.Context(), cm)
	}).WithTimeout(10*time.Second).Should(Succeed(), "changing ConfigMap %s/%s", ns, name)
}

// evaluatedWithoutError checks that Prometheus loaded the alerts named (the
// chart's), and evaluated each after since without an error: an alert that
// does not fire is one whose expression ran.
func evaluatedWithoutError(t *testing.T, prom *server, names []string, since time.Time) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		rules, err := prom.rules()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rules).To(HaveLen(len(names)), "Prometheus loaded every alert of the chart")
		for _, r := range rules {
			g.Expect(names).To(ContainElement(r.Name), "Prometheus loaded an alert of the chart")
			g.Expect(r.Health).To(Equal("ok"), "rule %s: %s", r.Name, r.LastError)
			g.Expect(r.LastEvaluation).To(BeTemporally(">", since), "rule %s evaluated", r.Name)
		}
	}).WithTimeout(10*time.Second).Should(Succeed(), "every rule evaluated without error")
}

// dashboardShowsSeries checks that every query of the chart's dashboard
// returns a series, but those of the panels of empty (title → why it may be
// empty), with its job variable set to what the variable's own query
// finds in prom.
func dashboardShowsSeries(t *testing.T, prom *server, empty map[string]string) {
	t.Helper()
	g := NewWithT(t)
	panels, variable := dashboard(t)
	var jobs []string
	g.Expect(prom.api("/api/v1/label/job/values", map[string][]string{"match[]": {variable}}, &jobs)).To(Succeed())
	g.Expect(jobs).To(Equal([]string{"nudge"}), "the dashboard's job variable (%s) finds nudge's job", variable)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$job", "nudge")
	for title := range empty {
		g.Expect(panels).To(ContainElement(HaveField("Title", title)), "the dashboard has the panel %q", title)
	}
	g.Eventually(func(g Gomega) {
		for _, p := range panels {
			series, err := prom.series(vars.Replace(p.Expr))
			g.Expect(err).NotTo(HaveOccurred(), "panel %q", p.Title)
			if _, ok := empty[p.Title]; !ok {
				g.Expect(series).NotTo(BeEmpty(), "panel %q queries a series: %s", p.Title, p.Expr)
			}
		}
	}).WithTimeout(30*time.Second).Should(Succeed(), "every panel of the dashboard to show a series")
}

// panel is one query of a panel of the dashboard.
type panel struct {
	Title, Expr string
}

// dashboard returns every query of the chart's dashboard (charts/nudge/
// files/dashboard.json), with its panel's title, and the series selector of
// the job variable's query, label_values(METRIC, job).
func dashboard(t *testing.T) (panels []panel, jobVariable string) {
	t.Helper()
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	type raw struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []raw `json:"panels"`
	}
	var d struct {
		Panels     []raw `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	g.Expect(json.Unmarshal(b, &d)).To(Succeed())
	var walk func([]raw)
	walk = func(ps []raw) {
		for _, p := range ps {
			for _, target := range p.Targets {
				panels = append(panels, panel{Title: p.Title, Expr: target.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	g.Expect(panels).NotTo(BeEmpty(), "the dashboard has queries")
	for _, v := range d.Templating.List {
		if v.Name == "job" {
			q, _ := v.Query.(string)
			m, found := strings.CutPrefix(q, "label_values(")
			selector, _, ok := strings.Cut(m, ", job)")
			g.Expect(found && ok).To(BeTrue(), "the job variable's query %q is label_values(METRIC, job)", q)
			return panels, selector
		}
	}
	t.Fatal("the dashboard has no job variable")
	return nil, ""
}

// mustDuration parses s, a Go duration.
func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
