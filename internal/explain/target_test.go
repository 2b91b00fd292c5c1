package explain

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

func TestParseTarget(t *testing.T) {
	tests := map[string]struct {
		args     []string
		workload workload.Kind
		source   refs.Kind
		name     string
		usage    bool
		says     string
	}{
		"TYPE/NAME of a workload":               {args: []string{"deployment/web"}, workload: workload.Deployment, name: "web"},
		"TYPE NAME as two arguments":            {args: []string{"statefulset", "db"}, workload: workload.StatefulSet, name: "db"},
		"kubectl's short name":                  {args: []string{"ds/agent"}, workload: workload.DaemonSet, name: "agent"},
		"the plural in capitals":                {args: []string{"CRONJOBS/nightly"}, workload: workload.CronJob, name: "nightly"},
		"a kind qualified by its group":         {args: []string{"rollouts.argoproj.io/web"}, workload: workload.Rollout, name: "web"},
		"a Job":                                 {args: []string{"job/once"}, workload: workload.Job, name: "once"},
		"a ConfigMap by short name":             {args: []string{"cm/app"}, source: refs.ConfigMap, name: "app"},
		"a Secret":                              {args: []string{"secret", "db"}, source: refs.Secret, name: "db"},
		"a kind nudge does not handle is usage": {args: []string{"replicaset/web"}, usage: true},
		"a pod is usage: never evicted alone":   {args: []string{"pod/web"}, usage: true, says: "a bare Pod is never evicted"},
		"a wrong group is usage":                {args: []string{"deployments.batch/web"}, usage: true},
		"a group on a core kind is usage":       {args: []string{"secrets.apps/db"}, usage: true},
		"no name is usage":                      {args: []string{"deployment/"}, usage: true},
		"a type alone is usage":                 {args: []string{"deployment"}, usage: true},
		"three arguments are usage":             {args: []string{"deployment", "a", "b"}, usage: true},
		"TYPE/NAME and another name are usage":  {args: []string{"deployment/a", "b"}, usage: true},
		"a name with a slash is usage":          {args: []string{"deployment/a/b"}, usage: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseTarget(tc.args)
			if tc.usage {
				g.Expect(err).To(MatchError(ErrUsage))
				g.Expect(err.Error()).To(ContainSubstring(tc.says))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(Target{Workload: tc.workload, Source: tc.source, Name: tc.name}))
		})
	}
}

func TestWriteCutsLinesToTheWidth(t *testing.T) {
	tests := map[string]struct {
		width int
		in    string
		want  string
	}{
		"no limit keeps every line":           {0, "abcdef\nab\n", "abcdef\nab\n"},
		"a long line is cut with an ellipsis": {4, "abcdef\nab\n", "abc…\nab\n"},
		"characters count, not bytes":         {3, "ééé\néééé\n", "ééé\néé…\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var b strings.Builder
			g.Expect(write(&b, tc.width, []byte(tc.in))).To(Succeed())
			g.Expect(b.String()).To(Equal(tc.want))
		})
	}
}
