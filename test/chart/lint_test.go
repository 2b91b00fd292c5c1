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
		"a namespace selector without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaceSelector": "team=a"}},
			want:   "reloader.namespaceSelector needs reloader.watchGlobally=true",
		},
		"a value neither chart knows": {
			values: charttest.Values{"reloader": map[string]any{"deployment": map[string]any{"replica": 2}}},
			want:   "additional properties 'replica' not allowed",
		},
		"a custom annotation Reloader's chart does not know": {
			values: charttest.Values{"reloader": map[string]any{"custom_annotations": map[string]any{"configmaps": "a.example/cm"}}},
			want:   "additional properties 'configmaps' not allowed",
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
