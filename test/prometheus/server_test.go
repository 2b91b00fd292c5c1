package prometheus

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/test/chart/charttest"
)

// interval is the scrape and rule evaluation interval of the tests'
// Prometheus, and forDuration the `for:` of every alert that has one, in
// place of the chart's minutes: an alert with a `for:` still has to stay
// pending for several evaluations before it fires.
const (
	interval    = time.Second
	forDuration = "5s"
)

// server is a Prometheus server the test started.
type server struct {
	// url is its HTTP API's base, http://127.0.0.1:PORT.
	url string
}

// startPrometheus runs Prometheus on a free port of 127.0.0.1 with a data
// directory of its own, scraping target (host:port of a nudge's /metrics) as
// job "nudge" with the label namespace=ns (as a ServiceMonitor of the
// chart's metrics Service labels it) every interval, and evaluating rules
// (a Prometheus rule file) every interval. It waits until Prometheus is
// ready; Prometheus is stopped when t ends, and its output logged if t
// failed.
func startPrometheus(t *testing.T, target, ns string, rules []byte) *server {
	t.Helper()
	bin := charttest.Built(t, "prometheus", "hack/prometheus.sh", "prometheus")
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
rule_files: [alerts.yaml]
scrape_configs:
- job_name: nudge
  static_configs:
  - targets: [%[2]q]
    labels: {namespace: %[3]q}
`, interval, target, ns)
	for name, b := range map[string][]byte{"prometheus.yaml": []byte(config), "alerts.yaml": rules} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := nudgetest.FreeAddr(t)
	s := &server{url: "http://" + addr}
	p := nudgetest.StartProcess(t, bin, nil,
		"--config.file="+filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	deadline := time.Now().Add(60 * time.Second)
	for nudgetest.Get(s.url+"/-/ready") == "" {
		if p.Exited() {
			t.Fatalf("prometheus exited before it was ready:\n%s", p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus was not ready on %s within 60 s:\n%s", s.url, p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// api GETs the API path (e.g. /api/v1/alerts) with query and decodes the
// response's data into data. It returns an error when the request fails or
// Prometheus answers with an error.
func (s *server) api(path string, query url.Values, data any) error {
	u := s.url + path
	if query != nil {
		u += "?" + query.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		return fmt.Errorf("getting %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s: %w", u, err)
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decoding %s (%s): %w", u, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s %s", u, resp.Status, r.Error)
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		return fmt.Errorf("decoding the data of %s: %w", u, err)
	}
	return nil
}

// alert is an alert of /api/v1/alerts
// (https://prometheus.io/docs/prometheus/latest/querying/api/#alerts).
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending or firing
	Value  string            `json:"value"`
}

// alerts returns the active alerts (pending and firing).
func (s *server) alerts() ([]alert, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	err := s.api("/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// firing returns the names of the alerts firing, one per alert (an alert
// firing for two label sets is named twice).
func (s *server) firing() ([]string, error) {
	all, err := s.alerts()
	var names []string
	for _, a := range all {
		if a.State == "firing" {
			names = append(names, a.Labels["alertname"])
		}
	}
	return names, err
}

// rule is an alerting rule of /api/v1/rules
// (https://prometheus.io/docs/prometheus/latest/querying/api/#rules).
type rule struct {
	Name           string    `json:"name"`
	Health         string    `json:"health"` // ok, err or unknown (not evaluated yet)
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// rules returns the alerting rules Prometheus loaded, with the health of
// their last evaluation.
func (s *server) rules() ([]rule, error) {
	var data struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	err := s.api("/api/v1/rules", url.Values{"type": {"alert"}}, &data)
	var rules []rule
	for _, g := range data.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules, err
}

// series returns the series an instant query of expr returns now, each as
// its labels; a query Prometheus refuses is an error.
func (s *server) series(expr string) ([]map[string]string, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	if err := s.api("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s returned a %s, not a vector", expr, data.ResultType)
	}
	var series []map[string]string
	for _, r := range data.Result {
		series = append(series, r.Metric)
	}
	return series, nil
}

// ruleFile is a Prometheus rule file
// (https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/).
type ruleFile struct {
	Groups []map[string]any `json:"groups"`
}

// renderedRules renders the chart with prometheusRule.enabled and returns
// its PrometheusRule's spec, the rule file Prometheus loads, with every
// alert's `for:` set to forDuration, and the names of its alerts. The
// chart is not changed.
func renderedRules(t *testing.T) (file []byte, alerts []string) {
	t.Helper()
	m := charttest.Render(t, "nudge", "nudge-system", charttest.Values{"prometheusRule": map[string]any{"enabled": true}})
	pr := m.Get("PrometheusRule", "nudge")
	if pr == nil {
		t.Fatal("the chart renders no PrometheusRule with prometheusRule.enabled")
	}
	spec, err := yaml.Marshal(pr.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(spec, &rf); err != nil {
		t.Fatalf("decoding the PrometheusRule's spec: %v", err)
	}
	for _, g := range rf.Groups {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			r, _ := r.(map[string]any)
			if name, ok := r["alert"].(string); ok {
				alerts = append(alerts, name)
			}
			if _, ok := r["for"]; ok {
				r["for"] = forDuration
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("the PrometheusRule has no alert")
	}
	file, err = yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	return file, alerts
}
