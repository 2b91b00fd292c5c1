package controller_test

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// paused is the annotations of a workload that opts in and is paused.
var paused = map[string]string{"nudge.dev/auto": "true", dialect.NudgePaused: "true"}

// setApp sets the ConfigMap app's key n to v.
func (e *env) setApp(v int) {
	e.T.Helper()
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = strconv.Itoa(v) })
}

// applied returns the Deployment's applied state.
func (e *env) applied(name string) func() string {
	return func() string { return e.Deployment(name).Annotations[workload.AppliedAnnotation] }
}

// heldWhilePaused changes the ConfigMap app twice and checks that the
// Deployment web, paused, neither rolls nor records the changes.
func (e *env) heldWhilePaused() {
	e.T.Helper()
	before := e.applied("web")()
	e.setApp(1)
	e.setApp(2)
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(BeZero(), "no rollout while paused")
	e.G.Expect(e.applied("web")()).To(Equal(before), "the applied state keeps the old content: the change stays pending")
}

// rolledOnceWithTheLatest waits for the Deployment web's one rollout and
// checks that it recorded the ConfigMap's latest content: the applied
// state of a Deployment created after it, reading it the same way.
func (e *env) rolledOnceWithTheLatest() {
	e.T.Helper()
	e.RolledTo("web", 1)
	e.Create(nt.Deployment(e.NS, "probe", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("probe")
	e.G.Expect(e.applied("web")()).To(Equal(e.applied("probe")()), "the rollout recorded the latest content")
}

// A pause on the workload holds its rollouts without forgetting the
// changes: two changes while paused, nothing written; the pause lifted,
// one rollout with the latest content.
func TestPauseOnTheWorkloadRollsOnceWhenLifted(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}), nt.Deployment(e.NS, "web", 1, paused, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web") // a pause holds no baseline
	e.heldWhilePaused()
	e.Annotate("web", `{"`+dialect.NudgePaused+`":null}`)
	e.rolledOnceWithTheLatest()
}

// A pause is an annotation: it holds across a restart of nudge, and the
// change made before and during it rolls once when the pause is lifted.
func TestPauseSurvivesARestartOfNudge(t *testing.T) {
	opts := func(o *options.Options) { o.RolloutWindow = 0 }
	e := setup(t, true, opts)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}), nt.Deployment(e.NS, "web", 1, paused, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.setApp(1)
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(BeZero(), "no rollout while paused")

	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, opts)
	e.setApp(2)
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(BeZero(), "no rollout while paused, after a restart")
	e.Annotate("web", `{"`+dialect.NudgePaused+`":"false"}`)
	e.rolledOnceWithTheLatest()
}

// A pause on the Namespace holds the rollouts of every workload in it;
// removing it from the Namespace reaches them. A malformed one pauses
// nothing, with a Warning on its workloads. Namespaces are read by a
// cluster-wide nudge only: this one selects the test's namespace by its
// label.
func TestPauseOnTheNamespace(t *testing.T) {
	e := setup(t, false, nil)
	annotateNamespace := func(value string) {
		e.G.Expect(e.K8s.Patch(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS}}, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+dialect.NudgePaused+`":`+value+`}}}`)))).To(Succeed())
	}
	annotateNamespace(`"true"`)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
		o.RolloutWindow = 0
		o.Namespaces, o.NamespaceSelector = nil, "kubernetes.io/metadata.name="+e.NS
	})
	e.Baselined("web")
	e.heldWhilePaused()
	annotateNamespace(`null`)
	e.rolledOnceWithTheLatest()

	annotateNamespace(`"maybe"`)
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("namespace "+e.NS), ContainSubstring(`"maybe"`)))), "a Warning naming the Namespace's pause")
	e.setApp(3)
	e.RolledTo("web", 2) // a malformed pause pauses nothing
}

// A pause on a source holds the rollouts of its own changes only: lifted,
// they roll once. A change of another source rolls, and takes the paused
// one's change with it (the new pods read it): the lift then rolls
// nothing more.
func TestPauseOnASource(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	app := nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"})
	app.Annotations = map[string]string{dialect.NudgePaused: "true"}
	e.Create(app, nt.ConfigMap(e.NS, "other", map[string]string{"n": "0"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("ConfigMap", "other")))
	e.Baselined("web")
	e.heldWhilePaused()
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { delete(c.Annotations, dialect.NudgePaused) })
	e.RolledTo("web", 1)

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Annotations = map[string]string{dialect.NudgePaused: "true"} })
	e.setApp(3)
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(Equal(int64(1)), "no rollout for the paused source's change")
	e.UpdateConfigMap("other", func(c *corev1.ConfigMap) { c.Data["n"] = "1" })
	e.RolledTo("web", 2) // for other's change, with app's
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Annotations[dialect.NudgePaused] = "false" })
	e.RolledTo("web", 2) // app's change was rolled with other's
}

// Opting out is not pausing: a workload that opts out has nudge's state
// removed, so a change made meanwhile is never rolled (its return is first
// sight); a paused one keeps it, and rolls the change once lifted.
func TestPauseKeepsWhatOptingOutForgets(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}),
		nt.Deployment(e.NS, "web", 1, paused, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "out", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.Baselined("out")
	e.Annotate("out", `{"nudge.dev/auto":null}`)
	e.G.Eventually(func() map[string]string { return e.Deployment("out").Labels }).WithTimeout(10*time.Second).
		ShouldNot(HaveKey(workload.SealLabel), "nudge to drop its state from the Deployment that opted out")

	e.setApp(1)
	e.G.Consistently(func() []int64 { return []int64{e.Rollouts("web")(), e.Rollouts("out")()} }).WithTimeout(3*time.Second).
		Should(Equal([]int64{0, 0}), "neither rolls: one paused, one out")
	e.Annotate("web", `{"`+dialect.NudgePaused+`":null}`)
	e.Annotate("out", `{"nudge.dev/auto":"true"}`)
	e.Baselined("out")
	e.RolledTo("web", 1)
	e.RolledTo("out", 0)
}

// A pause that is neither "true" nor "false" pauses nothing, and says so:
// on the workload, in a Warning MalformedAnnotation naming the annotation;
// on a source, in one on the workload naming the source.
func TestMalformedPausePausesNothing(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	other := nt.ConfigMap(e.NS, "other", map[string]string{"n": "0"})
	other.Annotations = map[string]string{dialect.NudgePaused: "soon"}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}), other,
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true", dialect.NudgePaused: "yes"}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "reader", 1, auto, nt.EnvFrom("ConfigMap", "other")))
	e.Baselined("web")
	e.Baselined("reader")
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring(dialect.NudgePaused), ContainSubstring(`"yes"`)))), "a Warning naming the annotation")
	e.G.Eventually(e.Events("reader", record.ReasonMalformedAnnotation)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("ConfigMap "+e.NS+"/other"), ContainSubstring(`"soon"`)))), "a Warning naming the source")

	e.setApp(1)
	e.RolledTo("web", 1)
	e.UpdateConfigMap("other", func(c *corev1.ConfigMap) { c.Data["n"] = "1" })
	e.RolledTo("reader", 1)
}
