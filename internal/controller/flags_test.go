package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// TestReloaderFlags pins each of Reloader's flags with a case that rolls and
// one that must not.
func TestReloaderFlags(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts        func(o *options.Options, ns string)
		nsLabels    map[string]string
		annotations map[string]string
		appLabels   map[string]string
		pod         []nt.PodOption
		change      string
		wantRoll    bool
	}{
		"--auto-reload-all rolls a workload without annotations": {
			opts:   func(o *options.Options, _ string) { o.AutoReloadAll = true },
			pod:    []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app", wantRoll: true,
		},
		"--auto-reload-all spares a workload that opts out": {
			opts:        func(o *options.Options, _ string) { o.AutoReloadAll = true },
			annotations: map[string]string{"reloader.stakater.com/auto": "false"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change:      "ConfigMap/app",
		},
		"--namespaces-to-ignore spares its namespaces": {
			opts:        func(o *options.Options, ns string) { o.NamespacesToIgnore = []string{ns} },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app",
		},
		"--namespace-selector rolls in a matching namespace": {
			opts:        func(o *options.Options, _ string) { o.NamespaceSelector = "team=blue" },
			nsLabels:    map[string]string{"team": "blue"},
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app", wantRoll: true,
		},
		"--namespace-selector spares other namespaces": {
			opts:        func(o *options.Options, _ string) { o.NamespaceSelector = "team=blue" },
			nsLabels:    map[string]string{"team": "red"},
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app",
		},
		"--resource-label-selector rolls for a matching source": {
			opts:        func(o *options.Options, _ string) { o.ResourceLabelSelector = "reload=yes" },
			appLabels:   map[string]string{"reload": "yes"},
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app", wantRoll: true,
		},
		"--resource-label-selector spares other sources": {
			opts:        func(o *options.Options, _ string) { o.ResourceLabelSelector = "reload=yes" },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app",
		},
		"--resources-to-ignore=configMaps spares ConfigMaps": {
			opts:        func(o *options.Options, _ string) { o.ResourcesToIgnore = []string{"configMaps"} },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			change: "ConfigMap/app",
		},
		"--resources-to-ignore=configMaps still rolls for Secrets": {
			opts:        func(o *options.Options, _ string) { o.ResourcesToIgnore = []string{"configMaps"} },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")},
			change: "Secret/db", wantRoll: true,
		},
		"--ignored-workload-types=deployments spares Deployments": {
			opts:        func(o *options.Options, _ string) { o.IgnoredWorkloadTypes = []string{"deployments"} },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app",
		},
		"--ignored-workload-types=jobs,cronjobs still rolls Deployments": {
			opts:        func(o *options.Options, _ string) { o.IgnoredWorkloadTypes = []string{"jobs", "cronjobs"} },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "ConfigMap/app", wantRoll: true,
		},
		"--reload-on-delete rolls when a required source is deleted": {
			opts:        func(o *options.Options, _ string) { o.ReloadOnDelete = true },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "delete ConfigMap/app", wantRoll: true,
		},
		"without --reload-on-delete a required source's deletion rolls nothing": {
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "delete ConfigMap/app",
		},
		"--reload-on-create rolls when a deleted source returns with its old content": {
			opts:        func(o *options.Options, _ string) { o.ReloadOnCreate = true },
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "recreate ConfigMap/app", wantRoll: true,
		},
		"without --reload-on-create a source returning with its old content rolls nothing": {
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			change: "recreate ConfigMap/app",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, false, nil)
			if tc.nsLabels != nil {
				var ns corev1.Namespace
				e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Name: e.NS}, &ns)).To(Succeed())
				ns.Labels = tc.nsLabels
				e.G.Expect(suite.K8s.Update(e.Ctx, &ns)).To(Succeed())
			}
			app := nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"})
			app.Labels = tc.appLabels
			e.Create(app, nt.Secret(e.NS, "db", map[string]string{"password": "p"}),
				nt.Deployment(e.NS, "web", 1, tc.annotations, tc.pod...))
			e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
				o.RolloutWindow = 0
				if tc.opts != nil {
					tc.opts(o, e.NS)
				}
			})
			// A baseline proves nudge looked at the workload; when it must
			// not even look, waiting for one would fail.
			if tc.wantRoll {
				e.Baselined("web")
			} else {
				e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero())
			}
			switch tc.change {
			case "delete ConfigMap/app":
				e.G.Expect(suite.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "app", nil))).To(Succeed())
			case "recreate ConfigMap/app":
				e.G.Expect(suite.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "app", nil))).To(Succeed())
				e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "no rollout for the deletion")
				e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}))
			default:
				e.changeData(tc.change)
			}
			var want int64
			if tc.wantRoll {
				want = 1
			}
			e.RolledTo("web", want)
		})
	}
}

// Reloader's env-vars strategy: STAKATER_<NAME>_<KIND> on the container that
// uses the source, holding a keyed digest; idempotent.
func TestEnvVarsStrategy(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.ReloadStrategy = "env-vars"; o.RolloutWindow = 0 })
	d := nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("Secret", "db"))
	d.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "registry.example/side:1"}}, d.Spec.Template.Spec.Containers...)
	e.Create(nt.Secret(e.NS, "db-creds", map[string]string{"password": "p"}), nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), d)
	e.Baselined("web")
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.RolledTo("web", 1)
	got := e.Deployment("web")
	e.G.Expect(got.Spec.Template.Spec.Containers[0].Env).To(BeEmpty(), "the sidecar does not use the Secret")
	e.G.Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/side:1"), "the rest of the containers kept")
	e.G.Expect(got.Spec.Template.Spec.Containers[1].Env).To(ConsistOf(And(
		HaveField("Name", workload.EnvVarName(secretSource(e.NS, "db"))),
		HaveField("Value", MatchRegexp(`^[A-Za-z0-9_-]{16}$`)),
	)))
	e.G.Expect(got.Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
	first := got.Spec.Template.Spec.Containers[1].Env[0].Value
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p3") })
	e.RolledTo("web", 2)
	e.G.Expect(e.Deployment("web").Spec.Template.Spec.Containers[1].Env).To(ConsistOf(HaveField("Value", Not(Equal(first)))))
}

// Reloader's pause period: the Deployment is paused with the trigger and
// resumed when the period ends, also across a restart of nudge.
func TestPausePeriod(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true", dialect.ReloaderPausePeriod: "3s"},
			nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(func() bool { return e.Deployment("web").Spec.Paused }).WithTimeout(10*time.Second).Should(BeTrue(), "paused with the trigger")
	e.G.Expect(e.Deployment("web").Annotations).To(HaveKey(dialect.ReloaderPausedAt))
	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
	e.G.Eventually(func() bool { return e.Deployment("web").Spec.Paused }).WithTimeout(15*time.Second).Should(BeFalse(), "resumed after the period")
	e.G.Expect(e.Deployment("web").Annotations).NotTo(HaveKey(dialect.ReloaderPausedAt))
	e.G.Expect(e.Rollouts("web")()).To(Equal(int64(1)))
}

// A workload another tool rolled before is adopted with no rollout.
func TestTakeOverFromOtherTools(t *testing.T) {
	e := setup(t, false, nil)
	d := nt.Deployment(e.NS, "web", 1, map[string]string{"reloader.stakater.com/auto": "true", "wave.pusher.com/update-on-config-change": "true",
		"pod-reloader.cs.sap.com/configmaps": "app"}, nt.EnvFrom("ConfigMap", "app"))
	d.Spec.Template.Annotations = map[string]string{
		"reloader.stakater.com/last-reloaded-from": `{"type":"CONFIGMAP","name":"app"}`,
		"wave.pusher.com/config-hash":              "0123456789abcdef",
		"pod-reloader.cs.sap.com/config-hash":      "fedcba9876543210",
	}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: "9ff99bd578c45053d076640b122ec309c61d3b7e"}}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), d)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, nil)
	e.Baselined("web")
	e.RolledTo("web", 0)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

// Wave's cross-namespace names: a namespace nudge does not watch gets a
// Warning, not a crash nor a rollout.
func TestCrossNamespaceOutsideScopeWarns(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"wave.pusher.com/extra-configmaps": "elsewhere/ca, app"}))
	e.Baselined("web")
	e.G.Eventually(e.Events("web", record.ReasonNamespaceNotWatched)).WithTimeout(10 * time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring(`namespace "elsewhere"`))))
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

func secretSource(ns, name string) refs.Source {
	return refs.Source{Kind: refs.Secret, Namespace: ns, Name: name}
}

// --namespace-selector: a namespace that comes to match is handled at once,
// without waiting for its workloads to change.
func TestNamespaceSelectorFollowsLabels(t *testing.T) {
	e := setup(t, false, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.NamespaceSelector = "team=blue"; o.RolloutWindow = 0 })
	e.G.Consistently(func() string { return e.Deployment("web").Annotations[workload.AppliedAnnotation] }).
		WithTimeout(2*time.Second).Should(BeEmpty(), "an unselected namespace left alone")

	var ns corev1.Namespace
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Name: e.NS}, &ns)).To(Succeed())
	ns.Labels = map[string]string{"team": "blue"}
	e.G.Expect(suite.K8s.Update(e.Ctx, &ns)).To(Succeed())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

// A Deployment its owner paused stays paused: nudge ends only its own pause.
func TestPausePeriodLeavesAnOwnersPause(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	d := nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true", dialect.ReloaderPausePeriod: "1s"},
		nt.EnvFrom("ConfigMap", "app"))
	d.Spec.Paused = true
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), d)
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.G.Consistently(func() bool { return e.Deployment("web").Spec.Paused }).WithTimeout(2*time.Second).Should(BeTrue(), "still paused")
	e.G.Expect(e.Deployment("web").Annotations).NotTo(HaveKey(dialect.ReloaderPausedAt))
}
