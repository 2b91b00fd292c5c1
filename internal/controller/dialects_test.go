package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// TestEveryDialectForm pins rules 1 and 2 for each annotation form: a data
// change of a selected source rolls the workload exactly once, a change of
// the source's labels or annotations rolls nothing, and a source the form
// does not select rolls nothing.
func TestEveryDialectForm(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		annotations map[string]string
		onTemplate  bool // annotations go on the pod template instead
		pod         []nt.PodOption
		matchOnApp  bool // ConfigMap app carries reloader.stakater.com/match
		change      string
		wantRoll    bool
	}{
		"nudge.dev/auto with a ConfigMap read by envFrom": {
			annotations: map[string]string{"nudge.dev/auto": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change:      "ConfigMap/app", wantRoll: true,
		},
		"nudge.dev/configmaps with a ConfigMap the pod spec does not use": {
			annotations: map[string]string{"nudge.dev/configmaps": "extra"},
			change:      "ConfigMap/extra", wantRoll: true,
		},
		"nudge.dev/secrets with a Secret volume": {
			annotations: map[string]string{"nudge.dev/secrets": "db"},
			pod:         []nt.PodOption{nt.Volume("Secret", "db")},
			change:      "Secret/db", wantRoll: true,
		},
		"nudge.dev/secrets does not roll on a ConfigMap it does not name": {
			annotations: map[string]string{"nudge.dev/secrets": "db"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			change:      "ConfigMap/app",
		},
		"reloader.stakater.com/auto with a Secret volume": {
			annotations: map[string]string{"reloader.stakater.com/auto": "true"},
			pod:         []nt.PodOption{nt.Volume("Secret", "db")},
			change:      "Secret/db", wantRoll: true,
		},
		"reloader.stakater.com/auto read from the pod template": {
			annotations: map[string]string{"reloader.stakater.com/auto": "true"},
			onTemplate:  true,
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change:      "ConfigMap/app", wantRoll: true,
		},
		"configmap.reloader.stakater.com/auto with a ConfigMap": {
			annotations: map[string]string{"configmap.reloader.stakater.com/auto": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			change:      "ConfigMap/app", wantRoll: true,
		},
		"configmap.reloader.stakater.com/auto does not roll on a Secret": {
			annotations: map[string]string{"configmap.reloader.stakater.com/auto": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			change:      "Secret/db",
		},
		"secret.reloader.stakater.com/auto with a Secret": {
			annotations: map[string]string{"secret.reloader.stakater.com/auto": "true"},
			pod:         []nt.PodOption{nt.Volume("Secret", "db")},
			change:      "Secret/db", wantRoll: true,
		},
		"configmap.reloader.stakater.com/reload with an anchored regular expression": {
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "ext.*"},
			change:      "ConfigMap/extra", wantRoll: true,
		},
		"configmap.reloader.stakater.com/reload is anchored": {
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "xtr"},
			change:      "ConfigMap/extra",
		},
		"secret.reloader.stakater.com/reload with a name": {
			annotations: map[string]string{"secret.reloader.stakater.com/reload": "other, db"},
			change:      "Secret/db", wantRoll: true,
		},
		"reloader.stakater.com/search with a matched ConfigMap": {
			annotations: map[string]string{"reloader.stakater.com/search": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			matchOnApp:  true,
			change:      "ConfigMap/app", wantRoll: true,
		},
		"reloader.stakater.com/search does not roll on an unmatched source": {
			annotations: map[string]string{"reloader.stakater.com/search": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			matchOnApp:  true,
			change:      "Secret/db",
		},
		"configmaps.exclude.reloader.stakater.com/reload excludes from auto": {
			annotations: map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "app"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change:      "ConfigMap/app",
		},
		"secrets.exclude.reloader.stakater.com/reload excludes from auto": {
			annotations: map[string]string{"reloader.stakater.com/auto": "true", "secrets.exclude.reloader.stakater.com/reload": "db"},
			pod:         []nt.PodOption{nt.Volume("Secret", "db")},
			change:      "Secret/db",
		},
		"pod-reloader.cs.sap.com/configmaps": {
			annotations: map[string]string{"pod-reloader.cs.sap.com/configmaps": "app, extra"},
			change:      "ConfigMap/extra", wantRoll: true,
		},
		"pod-reloader.cs.sap.com/secrets": {
			annotations: map[string]string{"pod-reloader.cs.sap.com/secrets": "db"},
			change:      "Secret/db", wantRoll: true,
		},
		"wave.pusher.com/update-on-config-change": {
			annotations: map[string]string{"wave.pusher.com/update-on-config-change": "true"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change:      "ConfigMap/app", wantRoll: true,
		},
		"wave.pusher.com/extra-secrets": {
			annotations: map[string]string{"wave.pusher.com/extra-secrets": "db"},
			change:      "Secret/db", wantRoll: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, nil)
			app := nt.ConfigMap(e.NS, "app", map[string]string{"a": "1", "b": "2"})
			if tc.matchOnApp {
				app.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
			}
			d := nt.Deployment(e.NS, "web", 1, tc.annotations, tc.pod...)
			if tc.onTemplate {
				d.Annotations, d.Spec.Template.Annotations = nil, tc.annotations
			}
			e.Create(app,
				nt.ConfigMap(e.NS, "extra", map[string]string{"x": "1"}),
				nt.Secret(e.NS, "db", map[string]string{"user": "admin", "password": "hunter2"}),
				d)
			e.Baselined("web")

			e.changeData(tc.change)
			var want int64
			if tc.wantRoll {
				want = 1
				e.G.Eventually(e.Events("web", "Rolled")).WithTimeout(10*time.Second).Should(
					ContainElement(HaveField("Note", ContainSubstring(strings.Replace(tc.change, "/", " "+e.NS+"/", 1)))),
					"a Rolled Event naming the source")
			}
			e.RolledTo("web", want)

			e.changeMeta(tc.change)
			e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(Equal(want),
				"a label and annotation change to leave Deployment web alone")
		})
	}
}

// changeData changes the data of "ConfigMap/name" or "Secret/name".
func (e *env) changeData(source string) {
	e.T.Helper()
	kind, name, _ := strings.Cut(source, "/")
	stamp := time.Now().Format(time.RFC3339Nano)
	if kind == "Secret" {
		e.UpdateSecret(name, func(s *corev1.Secret) { s.Data["password"] = []byte(stamp) })
		return
	}
	e.UpdateConfigMap(name, func(c *corev1.ConfigMap) { c.Data["changed"] = stamp })
}

// changeMeta changes only the labels and annotations of a source.
func (e *env) changeMeta(source string) {
	e.T.Helper()
	kind, name, _ := strings.Cut(source, "/")
	stamp := time.Now().Format("150405.000000")
	touch := func(l, a map[string]string) (map[string]string, map[string]string) {
		if l == nil {
			l = map[string]string{}
		}
		if a == nil {
			a = map[string]string{}
		}
		l["touched"], a["touched-at"] = "yes", stamp
		return l, a
	}
	if kind == "Secret" {
		e.UpdateSecret(name, func(s *corev1.Secret) { s.Labels, s.Annotations = touch(s.Labels, s.Annotations) })
		return
	}
	e.UpdateConfigMap(name, func(c *corev1.ConfigMap) { c.Labels, c.Annotations = touch(c.Labels, c.Annotations) })
}
