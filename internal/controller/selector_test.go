package controller_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// labelled returns obj with labels l.
func labelled[T client.Object](obj T, l map[string]string) T {
	obj.SetLabels(l)
	return obj
}

var dash = map[string]string{"app": "dash"}

// A label selector's set of ConfigMaps (nudge.dev/configmap-selector, the
// k8s-sidecar pattern, Reloader's #1196) is one source: adding the selector
// is first sight; a member created, changed, labelled in or out, or
// deleted rolls once; a ConfigMap outside the set, a label that keeps a
// member in it, and an ignored member roll nothing.
func TestConfigMapSelectorRollsOncePerChangeOfItsSet(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		labelled(nt.ConfigMap(e.NS, "dash-0", map[string]string{"board.json": "{}"}), dash),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/configmaps": "app"}, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	applied := e.Deployment("web").Annotations[workload.AppliedAnnotation]
	e.Annotate("web", `{"nudge.dev/configmap-selector":"app=dash"}`)
	e.G.Eventually(func() string { return e.Deployment("web").Annotations[workload.AppliedAnnotation] }).
		WithTimeout(10*time.Second).ShouldNot(Equal(applied), "the set to enter the applied state")
	e.G.Expect(e.Deployment("web").Annotations[workload.AppliedAnnotation]).To(ContainSubstring(" ConfigMapSelector/app%3Ddash="))
	e.RolledTo("web", 0)

	e.Create(labelled(nt.ConfigMap(e.NS, "dash-1", map[string]string{"board.json": "{}"}), dash))
	e.RolledTo("web", 1)
	e.G.Expect(e.Events("web", record.ReasonRolled)()).To(ContainElement(HaveField("Note", ContainSubstring("ConfigMapSelector "+e.NS+"/app=dash"))),
		"the Event names the selector")
	e.UpdateConfigMap("dash-1", func(c *corev1.ConfigMap) { c.Data["board.json"] = `{"v":2}` })
	e.RolledTo("web", 2)

	e.Create(labelled(nt.ConfigMap(e.NS, "other", map[string]string{"board.json": "{}"}), map[string]string{"app": "shop"}))
	e.UpdateConfigMap("dash-1", func(c *corev1.ConfigMap) { c.Labels["team"] = "obs" })
	e.RolledTo("web", 2)

	e.UpdateConfigMap("other", func(c *corev1.ConfigMap) { c.Labels["app"] = "dash" })
	e.RolledTo("web", 3)
	e.UpdateConfigMap("other", func(c *corev1.ConfigMap) { c.Labels["app"] = "shop" })
	e.RolledTo("web", 4)

	e.UpdateConfigMap("dash-0", func(c *corev1.ConfigMap) { c.Annotations = map[string]string{"nudge.dev/ignore": "true"} })
	e.RolledTo("web", 5) // an ignored member leaves the set
	e.UpdateConfigMap("dash-0", func(c *corev1.ConfigMap) { c.Data["board.json"] = `{"v":2}` })
	e.RolledTo("web", 5)

	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "dash-1", nil))).To(Succeed())
	e.RolledTo("web", 6)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 7)
}

// nudge.dev/secret-selector likewise, once per change; a Helm release's
// Secret, whose labels (owner=helm) the selector matches, is never in the
// set.
func TestSecretSelectorRollsOnce(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/secret-selector": "owner=helm"}))
	e.Baselined("web")

	release := labelled(nt.Secret(e.NS, "sh.helm.release.v1.web.v1", map[string]string{"release": "H4sI"}), map[string]string{"owner": "helm"})
	release.Type = "helm.sh/release.v1"
	e.Create(release)
	e.RolledTo("web", 0)
	e.Create(labelled(nt.Secret(e.NS, "token", map[string]string{"t": "1"}), map[string]string{"owner": "helm"}))
	e.RolledTo("web", 1)
	e.UpdateSecret("token", func(s *corev1.Secret) { s.Data["t"] = []byte("2") })
	e.RolledTo("web", 2)
}

// A malformed selector is a MalformedAnnotation Warning and counts for
// nothing; the workload's other sources still roll it.
func TestMalformedSelectorWarns(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/configmaps": "app", "nudge.dev/configmap-selector": "app in (dash"},
			nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring(`"nudge.dev/configmap-selector"`))), "a Warning names the selector")

	e.Create(labelled(nt.ConfigMap(e.NS, "dash-1", nil), dash))
	e.RolledTo("web", 0)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

// Rule 1 for a set: 10 members created at once roll the workload at most
// twice (its first at once, the rest after it), within the default window.
func TestSelectorBurstRollsAtMostTwice(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/configmap-selector": "app=dash"}))
	e.Baselined("web")

	for i := range 10 {
		e.Create(labelled(nt.ConfigMap(e.NS, fmt.Sprintf("dash-%d", i), map[string]string{"board.json": "{}"}), dash))
	}
	e.G.Eventually(e.Rollouts("web")).WithTimeout(10*time.Second).Should(BeNumerically(">=", 1), "the burst to roll the workload")
	e.G.Consistently(e.Rollouts("web")).WithTimeout(8*time.Second).Should(BeNumerically("<=", 2),
		"at most two rollouts, past the 5 s window")
	n := e.Rollouts("web")()
	t.Logf("10 members created at once: %d rollout(s)", n)

	// The last rollout counted every member: nothing is left to roll.
	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "dash-3", nil))).To(Succeed())
	e.RolledTo("web", n+1)
}

// Rule 3 for a set: nudge started over a workload whose selector matches
// ConfigMaps records them and rolls nothing.
func TestSelectorFirstSightRollsNothing(t *testing.T) {
	e := setup(t, false, nil)
	e.Create(labelled(nt.ConfigMap(e.NS, "dash-1", map[string]string{"board.json": "{}"}), dash),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/configmap-selector": "app=dash"}))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, nil)
	e.Baselined("web")
	e.RolledTo("web", 0)
	e.G.Expect(suite.K8s.DeleteAllOf(e.Ctx, &corev1.ConfigMap{}, client.InNamespace(e.NS),
		client.MatchingLabels(dash))).To(Succeed())
	e.RolledTo("web", 1)
}

// With Reloader's env-vars strategy a set's rollout writes its own variable
// (STAKATER_APP_DASH_CONFIGMAP_SELECTOR) on the first container: no source
// of that name exists for Reloader to have named one alike.
func TestSelectorEnvVarsStrategy(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.ReloadStrategy = "env-vars"; o.RolloutWindow = 0 })
	e.Create(nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/configmap-selector": "app=dash"}))
	e.Baselined("web")
	e.Create(labelled(nt.ConfigMap(e.NS, "dash-1", map[string]string{"board.json": "{}"}), dash))
	e.RolledTo("web", 1)
	e.G.Expect(e.Deployment("web").Spec.Template.Spec.Containers[0].Env).To(ConsistOf(And(
		HaveField("Name", "STAKATER_APP_DASH_CONFIGMAP_SELECTOR"), HaveField("Value", MatchRegexp(`^[A-Za-z0-9_-]{16}$`)))))
}
