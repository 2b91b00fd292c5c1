// Package alerts tests nudge's alerts, the PrometheusRule the chart ships
// (charts/nudge/files/alerts.yaml): promtool checks them and runs their unit
// tests (testdata/*.yaml, on synthetic series), in which every alert both
// fires and stays silent. promtool is the one `make promtool` builds.
package alerts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/test/chart/charttest"
)

// ruleGroups is a Prometheus rule file, as far as the tests read it.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// unitTests is a promtool unit test file, as far as the tests read it.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name       string `json:"name"`
		AlertTests []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// rendered renders the chart with prometheusRule.enabled and returns the
// PrometheusRule's spec as YAML: the rule file Prometheus loads.
func rendered(t *testing.T) []byte {
	t.Helper()
	g := NewWithT(t)
	m := charttest.Render(t, "nudge", "nudge-system", charttest.Values{"prometheusRule": map[string]any{"enabled": true}})
	rule := m.Get("PrometheusRule", "nudge")
	g.Expect(rule).NotTo(BeNil(), "the chart renders a PrometheusRule with prometheusRule.enabled")
	spec, err := yaml.Marshal(rule.Object["spec"])
	g.Expect(err).NotTo(HaveOccurred())
	return spec
}

func TestAlerts(t *testing.T) {
	g := NewWithT(t)
	promtool := charttest.Bin(t, "promtool")
	spec := rendered(t)

	var rules ruleGroups
	g.Expect(yaml.Unmarshal(spec, &rules)).To(Succeed())
	source, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "alerts.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var fromFile ruleGroups
	g.Expect(yaml.Unmarshal(source, &fromFile)).To(Succeed())
	g.Expect(rules).To(Equal(fromFile), "the PrometheusRule holds files/alerts.yaml as it is")
	var alerts []string
	for _, grp := range rules.Groups {
		for _, r := range grp.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	g.Expect(alerts).To(ConsistOf("NudgeRolloutHalted", "NudgeRestartUnfinished", "NudgeRolloutFailed", "NudgeRolloutStorm", "NudgeEventsDropped",
		"NudgeValueBindingNotReady", "NudgeReconcileErrors", "NudgeSourceMissing", "NudgeShardWithoutLeader"))

	// The rendered rules and the unit tests side by side: the tests name
	// their rule file alerts.yaml.
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts.yaml"), spec, 0o644)).To(Succeed())
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	fires, silent := map[string]int{}, map[string]int{}
	var tests []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		var u unitTests
		g.Expect(yaml.Unmarshal(b, &u)).To(Succeed(), "parsing %s", f)
		g.Expect(u.RuleFiles).To(Equal([]string{"alerts.yaml"}), "%s tests the chart's rules", f)
		for _, tc := range u.Tests {
			for _, at := range tc.AlertTests {
				g.Expect(alerts).To(ContainElement(at.Alertname), "%s (%s) tests an alert the rules define", f, tc.Name)
				if len(at.ExpAlerts) > 0 {
					fires[at.Alertname]++
				} else {
					silent[at.Alertname]++
				}
			}
		}
		dst := filepath.Join(dir, filepath.Base(f))
		g.Expect(os.WriteFile(dst, b, 0o644)).To(Succeed())
		tests = append(tests, dst)
	}
	for _, a := range alerts {
		g.Expect(fires).To(HaveKey(a), "a unit test in which %s fires", a)
		g.Expect(silent).To(HaveKey(a), "a unit test in which %s stays silent", a)
	}

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		g.Expect(cmd.Run()).To(Succeed(), "promtool %v:\n%s", args, out.String())
		return out.String()
	}
	t.Log(run("check", "rules", "--lint=all", "--lint-fatal", "alerts.yaml"))
	slices.Sort(tests)
	t.Log(run(append([]string{"test", "rules"}, tests...)...))
}

// A unit test that expects an alert the rules do not raise fails: promtool
// test rules does compare, so the tests above can fail.
func TestPromtoolFailsAWrongExpectation(t *testing.T) {
	g := NewWithT(t)
	promtool := charttest.Bin(t, "promtool")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts.yaml"), rendered(t), 0o644)).To(Succeed())
	wrong := `rule_files: [alerts.yaml]
tests:
- interval: 1m
  input_series:
  - series: 'nudge_halted_workloads{namespace="nudge-system",job="nudge-metrics"}'
    values: '0x20'
  alert_rule_test:
  - eval_time: 10m
    alertname: NudgeRolloutHalted
    exp_alerts:
    - exp_labels: {severity: warning, namespace: nudge-system, job: nudge-metrics}
`
	g.Expect(os.WriteFile(filepath.Join(dir, "wrong.yaml"), []byte(wrong), 0o644)).To(Succeed())
	cmd := exec.Command(promtool, "test", "rules", "wrong.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "promtool test rules passed an alert that cannot fire:\n%s", out)
	g.Expect(string(out)).To(ContainSubstring("NudgeRolloutHalted"))
}
