package chart

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/chart/charttest"
)

func TestLint(t *testing.T) {
	for name, set := range map[string][]string{
		"default values":             nil,
		"namespaced":                 {"reloader.watchGlobally=false"},
		"replicated, with a monitor": {"replicas=2", "metrics.serviceMonitor.enabled=true"},
		"alerts and a dashboard":     {"prometheusRule.enabled=true", "dashboard.enabled=true"},
		"value bindings":             {"valueBindings.enabled=true", "valueBindings.targets[0].apiGroup=goharbor.io", "valueBindings.targets[0].kind=Harbor", "valueBindings.targets[0].resource=harbors"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", charttest.Chart(t)}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(charttest.Helm(t), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	tests := map[string]struct {
		values charttest.Values
		want   string
	}{
		"ignoring both kinds of source": {
			values: charttest.Values{"reloader": map[string]any{"ignoreSecrets": true, "ignoreConfigMaps": true}},
			want:   "cannot both be true",
		},
		"a namespace selector without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaceSelector": "team=a"}},
			want:   "reloader.namespaceSelector needs reloader.watchGlobally=true",
		},
		"a namespace selector the admission webhook's namespaceSelector cannot hold": {
			values: charttest.Values{"admissionWebhook": map[string]any{"enabled": true}, "reloader": map[string]any{"namespaceSelector": "tier>2"}},
			want:   `the term "tier>2" cannot be written as a term of the admission webhook's namespaceSelector`,
		},
		"a misspelt value of nudge's own, nested": {
			values: charttest.Values{"metrics": map[string]any{"serviceMonitor": map[string]any{"enable": true}}},
			want:   "additional properties 'enable' not allowed",
		},
		"a value of Reloader's chart of the wrong type": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": "no"}},
			want:   "watchGlobally",
		},
		"enabled that is not a boolean": {
			values: charttest.Values{"enabled": "yes"},
			want:   "enabled",
		},
		"a PodMonitor without metrics": {
			values: charttest.Values{"metrics": map[string]any{"enabled": false}, "reloader": map[string]any{"podMonitor": map[string]any{"enabled": true}}},
			want:   "reloader.podMonitor.enabled needs metrics.enabled",
		},
		"a misspelt value": {
			values: charttest.Values{"replica": 2},
			want:   "additional properties 'replica' not allowed",
		},
		"an unknown strategy": {
			values: charttest.Values{"reloader": map[string]any{"reloadStrategy": "rolling"}},
			want:   "reloadStrategy",
		},
		"a value binding target that is a Secret": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true,
				"targets": []map[string]any{{"apiGroup": "", "kind": "Secret", "resource": "secrets"}}}},
			want: "valueBindings.targets cannot list secrets: nudge never writes ConfigMaps, Secrets or Pods",
		},
		"a value binding target without its resource": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true,
				"targets": []map[string]any{{"apiGroup": "goharbor.io", "kind": "Harbor"}}}},
			want: "missing property 'resource'",
		},
		"a value binding target whose name would break out of the policy's CEL": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true,
				"targets": []map[string]any{{"apiGroup": "goharbor.io", "kind": "Harbor' || true || '", "resource": "harbors"}}}},
			want: "kind",
		},
		"a custom kind without its resource (its RBAC rule names it)": {
			values: charttest.Values{"customKinds": []any{map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledJob", "templatePath": "spec.jobTargetRef.template"}}},
			want:   "missing property 'resource'",
		},
		"a custom kind with neither a template nor a trigger path": {
			values: charttest.Values{"customKinds": []any{map[string]any{"apiVersion": "a.io/v1", "kind": "A", "resource": "as"}}},
			want:   "customKinds",
		},
		"a ServiceMonitor without metrics": {
			values: charttest.Values{"metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": true}}},
			want:   "metrics.serviceMonitor.enabled needs metrics.enabled",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, out, err := charttest.TryRender(t, release, namespace, tc.values)
			if err == nil {
				t.Fatalf("helm template succeeded; want an error containing %q", tc.want)
			}
			NewWithT(t).Expect(string(out)).To(ContainSubstring(tc.want))
		})
	}
}

// TestRenderEnabled: the chart takes enabled, which a parent chart's
// dependency condition reads (condition: nudge.enabled), and renders the
// same whatever its value: the parent's Helm decides whether to install it.
func TestRenderEnabled(t *testing.T) {
	g := NewWithT(t)
	want := charttest.Render(t, release, namespace, nil).Kinds()
	for _, enabled := range []any{true, false, nil} {
		g.Expect(charttest.Render(t, release, namespace, charttest.Values{"enabled": enabled}).Kinds()).To(Equal(want), "enabled: %v", enabled)
	}
}
