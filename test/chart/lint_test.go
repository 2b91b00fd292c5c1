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
		"namespaces without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaces": "shop"}},
			want:   "reloader.namespaces needs reloader.watchGlobally=true",
		},
		"a namespace selector without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaceSelector": "team=a"}},
			want:   "reloader.namespaceSelector needs reloader.watchGlobally=true",
		},
		"a Reloader value nudge does not take": {
			values: charttest.Values{"reloader": map[string]any{"deployment": map[string]any{"replicas": 2}}},
			want:   "additional properties 'deployment' not allowed",
		},
		"a misspelt value": {
			values: charttest.Values{"replica": 2},
			want:   "additional properties 'replica' not allowed",
		},
		"an unknown strategy": {
			values: charttest.Values{"reloader": map[string]any{"reloadStrategy": "rolling"}},
			want:   "reloadStrategy",
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
