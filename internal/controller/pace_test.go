package controller_test

import (
	"strconv"
	"time"

	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// pace is one test of the rules that pace rollouts (14 and 15): a nudge
// with a fake clock and no rollout window, so that each change rolls at
// once unless a pace rule holds it, and the test moves time.
type pace struct {
	*env
	clk  *clocktesting.FakePassiveClock
	opts func(*options.Options)
	n    int // the ConfigMap's changes so far
}

// setupPace starts a nudge with a fake clock, and a Deployment web reading
// ConfigMap app, with annotations (beside nudge.dev/auto), baselined.
func setupPace(t *testing.T, annotations map[string]string, mutate func(*options.Options)) *pace {
	p := &pace{clk: clocktesting.NewFakePassiveClock(time.Now())}
	p.opts = func(o *options.Options) {
		o.RolloutWindow, o.Clock = 0, p.clk
		if mutate != nil {
			mutate(o)
		}
	}
	p.env = setup(t, true, p.opts)
	a := map[string]string{"nudge.dev/auto": "true"}
	for k, v := range annotations {
		a[k] = v
	}
	p.Create(nt.ConfigMap(p.NS, "app", map[string]string{"n": "0"}), nt.Deployment(p.NS, "web", 1, a, nt.EnvFrom("ConfigMap", "app")))
	p.Baselined("web")
	return p
}

// change moves the clock by d and changes the ConfigMap.
func (p *pace) change(d time.Duration) {
	p.T.Helper()
	p.clk.SetTime(p.clk.Now().Add(d))
	p.n++
	p.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = strconv.Itoa(p.n) })
}

// restart stops the test's nudge and starts another, with the same clock.
func (p *pace) restart() {
	p.T.Helper()
	p.Nudge.Stop(p.T)
	p.Nudge = nt.Start(p.T, suite.Plane.Config(), p.NS, p.opts)
}

// held returns the Deployment's nudge.dev/held annotation.
func (p *pace) held() func() string {
	return func() string { return p.Deployment("web").Annotations[workload.HeldAnnotation] }
}

// poke makes the Deployment's nudge reconcile it: a change of its metadata
// that changes nothing nudge reads.
func (p *pace) poke() {
	p.T.Helper()
	p.Annotate("web", `{"test.nudge.dev/poke":"`+strconv.FormatInt(p.clk.Now().UnixNano(), 10)+`"}`)
}

// Rule 14: a change storm stops itself. Past its budget of rollouts in an
// hour (here 3, from the workload's annotation), a workload's change is
// held: recorded on it, said once in a Warning RolloutStorm, kept across a
// restart of nudge; when the budget frees, it rolls once, with the last
// content.
func TestStormBrakeHoldsPastTheBudgetAndRollsOnceWhenItFrees(t *testing.T) {
	p := setupPace(t, map[string]string{dialect.NudgeMaxRolloutsPerHour: "3"}, nil)
	for i := int64(1); i <= 3; i++ {
		p.change(3 * time.Second)
		p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(i), "rollout %d, within the budget", i)
	}
	p.change(3 * time.Second)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutStorm+" since "),
		"the hold recorded on the Deployment")
	p.G.Eventually(p.Events("web", record.ReasonRolloutStorm)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring("ConfigMap "+p.NS+"/app"), ContainSubstring("3 times in the last hour")))),
		"one Warning naming the source and the rollouts")
	p.change(3 * time.Second)
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2*time.Second).Should(Equal(int64(3)), "no rollout past the budget")

	p.restart()
	p.change(3 * time.Second)
	p.poke()
	p.G.Consistently(p.Rollouts("web")).WithTimeout(3*time.Second).Should(Equal(int64(3)), "the hold kept across a restart")
	p.G.Expect(p.Events("web", record.ReasonRolloutStorm)()).To(HaveLen(1), "one Warning for the hold, across the restart")

	p.clk.SetTime(p.clk.Now().Add(time.Hour))
	p.poke()
	p.RolledTo("web", 4)
	d := p.Deployment("web")
	p.G.Expect(d.Annotations).NotTo(HaveKey(workload.HeldAnnotation), "the hold ended by the rollout")
	p.G.Expect(workload.ParseRollouts(d.Annotations[workload.RolloutsAnnotation])).To(HaveLen(1), "the rollouts of the last hour recorded: this one")
	p.poke()
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2*time.Second).Should(Equal(int64(4)), "rolled with the last content: nothing left to roll")
}

// Rule 14: --max-rollouts-per-hour sets the budget, and with
// --allow-workload-overrides 0 on the workload turns the brake off for it.
func TestStormBrakeFlagAndItsOverride(t *testing.T) {
	p := setupPace(t, map[string]string{dialect.NudgeMaxRolloutsPerHour: "0"}, func(o *options.Options) {
		o.MaxRolloutsPerHour, o.AllowWorkloadOverrides = 1, true
	})
	for i := int64(1); i <= 3; i++ {
		p.change(3 * time.Second)
		p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(i), "rollout %d: no brake for this workload", i)
	}
	p.G.Expect(p.Deployment("web").Annotations).NotTo(HaveKey(workload.RolloutsAnnotation), "no rollout times kept without a brake")
	p.G.Expect(p.Events("web", record.ReasonOverrideRefused)()).To(BeEmpty(), "the override allowed")
	p.Annotate("web", `{"`+dialect.NudgeMaxRolloutsPerHour+`":null}`)
	p.change(3 * time.Second)
	p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(int64(4)), "the flag's budget of 1: the first rollout")
	p.change(3 * time.Second)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutStorm+" since "), "the flag's budget spent")
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2 * time.Second).Should(Equal(int64(4)))
}

// Rule 14 among tenants: without --allow-workload-overrides an annotation
// may lower the storm brake's budget, never raise or lift it. One that
// would is refused with a Warning naming it and the flag, and the flag's
// budget brakes the workload; one that lowers it is taken without a word.
func TestStormBrakeAnnotationMayOnlyLower(t *testing.T) {
	p := setupPace(t, map[string]string{dialect.NudgeMaxRolloutsPerHour: "0"}, func(o *options.Options) { o.MaxRolloutsPerHour = 2 })
	p.G.Eventually(p.Events("web", record.ReasonOverrideRefused)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", And(ContainSubstring(dialect.NudgeMaxRolloutsPerHour+` "0"`), ContainSubstring("--max-rollouts-per-hour (2)")))),
		"a Warning naming the annotation and the flag")
	for i := int64(1); i <= 2; i++ {
		p.change(3 * time.Second)
		p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(i), "rollout %d, within the flag's budget", i)
	}
	p.change(3 * time.Second)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutStorm+" since "), "the flag's budget brakes")
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2*time.Second).Should(Equal(int64(2)), "no brake lifted by the annotation")

	p.Annotate("web", `{"`+dialect.NudgeMaxRolloutsPerHour+`":"5"}`)
	p.G.Eventually(p.Events("web", record.ReasonOverrideRefused)).WithTimeout(10*time.Second).Should(ContainElement(
		HaveField("Note", ContainSubstring(dialect.NudgeMaxRolloutsPerHour+` "5"`))), "raising it is refused too")
	p.poke()
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2*time.Second).Should(Equal(int64(2)), "still braked at the flag's budget")

	p.clk.SetTime(p.clk.Now().Add(time.Hour))
	p.Annotate("web", `{"`+dialect.NudgeMaxRolloutsPerHour+`":"1"}`)
	p.RolledTo("web", 3) // the held change, once the hour has passed
	p.change(3 * time.Second)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutStorm+" since "), "a budget of 1, lowered, brakes")
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2 * time.Second).Should(Equal(int64(3)))
	p.G.Expect(p.Events("web", record.ReasonOverrideRefused)()).To(HaveLen(2), "a lower budget is no refusal")
}

// Rule 1 among tenants: without --allow-workload-overrides
// nudge.dev/rollout-window may lengthen --rollout-window, never shorten
// it: one that would is refused with a Warning, and a burst folds as the
// flag's window folds it; with the flag, it is taken. The clock stands
// still after the burst, so the flag's window, once it holds, never ends.
func TestRolloutWindowAnnotationMayOnlyLengthen(t *testing.T) {
	for name, tc := range map[string]struct {
		overrides bool
		rollouts  int64 // after a lone change and a burst of one more
	}{
		"refused: the flag's window folds the burst": {rollouts: 1},
		"with --allow-workload-overrides: no window": {overrides: true, rollouts: 2},
	} {
		t.Run(name, func(t *testing.T) {
			p := setupPace(t, map[string]string{dialect.NudgeRolloutWindow: "0s"}, func(o *options.Options) {
				o.RolloutWindow, o.AllowWorkloadOverrides = time.Hour, tc.overrides
			})
			p.change(time.Second)
			p.RolledTo("web", 1)       // a lone change rolls at once
			p.change(time.Millisecond) // a burst: a millisecond after the change before
			p.G.Eventually(p.Rollouts("web")).WithTimeout(10 * time.Second).Should(Equal(tc.rollouts))
			p.G.Consistently(p.Rollouts("web")).WithTimeout(3 * time.Second).Should(Equal(tc.rollouts))
			refused := p.Events("web", record.ReasonOverrideRefused)
			if tc.overrides {
				p.G.Expect(refused()).To(BeEmpty())
				return
			}
			p.G.Expect(refused()).To(ConsistOf(HaveField("Note", And(ContainSubstring(dialect.NudgeRolloutWindow+` "0s"`),
				ContainSubstring("--rollout-window (1h0m0s)")))), "a Warning naming the annotation and the flag")
		})
	}
}

// at returns today's hh:mm in UTC, on the day of t.
func at(t time.Time, hh, mm int) time.Time {
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), u.Day(), hh, mm, 0, 0, time.UTC)
}

// Rule 15: a change outside the workload's maintenance window is recorded
// as pending and rolls once, when the window opens, after a restart of
// nudge in between too.
func TestMaintenanceWindowDefersARolloutUntilItOpens(t *testing.T) {
	p := setupPace(t, map[string]string{dialect.NudgeMaintenanceWindow: "0 2 * * * 1h"}, nil)
	p.clk.SetTime(at(p.clk.Now(), 12, 0))
	p.change(0)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutDeferred+" since "),
		"the pending rollout recorded on the Deployment")
	p.G.Expect(p.held()()).To(ContainSubstring("until "+at(p.clk.Now(), 2, 0).AddDate(0, 0, 1).Format(time.RFC3339)), "the window's opening")
	p.G.Eventually(p.Events("web", record.ReasonRolloutDeferred)).WithTimeout(10*time.Second).Should(HaveLen(1), "one Event")

	p.restart()
	p.change(time.Hour)
	p.poke()
	p.G.Consistently(p.Rollouts("web")).WithTimeout(3*time.Second).Should(BeZero(), "no rollout before the window, across a restart")
	p.G.Expect(p.Events("web", record.ReasonRolloutDeferred)()).To(HaveLen(1), "one Event for the wait, across the restart")

	p.clk.SetTime(at(p.clk.Now(), 2, 1).AddDate(0, 0, 1))
	p.poke()
	p.RolledTo("web", 1)
	p.G.Expect(p.Deployment("web").Annotations).NotTo(HaveKey(workload.HeldAnnotation), "the wait ended by the rollout")

	p.change(10 * time.Minute)
	p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(int64(2)), "a change inside the window rolls at once")
}

// Rule 15: a change of a source marked nudge.dev/urgent rolls at once,
// window or not; a malformed window is a Warning, and the workload has none
// of its own: the flag's holds it.
func TestMaintenanceWindowUrgentAndMalformed(t *testing.T) {
	p := setupPace(t, nil, func(o *options.Options) { o.MaintenanceWindow = "0 2 * * * 1h" })
	p.clk.SetTime(at(p.clk.Now(), 12, 0))
	p.Create(nt.ConfigMap(p.NS, "cert", map[string]string{"n": "0"}),
		nt.Deployment(p.NS, "bad", 1, map[string]string{"nudge.dev/auto": "true", dialect.NudgeMaintenanceWindow: "at night"}, nt.EnvFrom("ConfigMap", "app")))
	p.Baselined("bad")
	p.Annotate("web", `{"nudge.dev/configmaps":"cert"}`)

	p.change(0)
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(HavePrefix(record.ReasonRolloutDeferred+" since "), "the flag's window")
	p.G.Eventually(func() string { return p.Deployment("bad").Annotations[workload.HeldAnnotation] }).WithTimeout(10*time.Second).
		Should(HavePrefix(record.ReasonRolloutDeferred+" since "), "a malformed window of its own: the flag's holds")
	p.G.Eventually(p.Events("bad", record.ReasonMalformedAnnotation)).WithTimeout(10*time.Second).Should(ConsistOf(
		HaveField("Note", ContainSubstring(dialect.NudgeMaintenanceWindow))), "a Warning naming the fault")

	p.UpdateConfigMap("cert", func(c *corev1.ConfigMap) {
		c.Annotations = map[string]string{dialect.NudgeUrgent: "true"}
		c.Data["n"] = "1"
	})
	p.G.Eventually(p.Rollouts("web")).WithTimeout(10*time.Second).Should(Equal(int64(1)), "an urgent source rolls at once")
	p.G.Expect(p.Deployment("web").Annotations).NotTo(HaveKey(workload.HeldAnnotation), "nothing left pending: the urgent rollout took the change of app too")
}

// Rule 15 among tenants: a workload's window narrows --maintenance-window,
// never widens it: a workload rolls when both are open. Its window open
// while the flag's is closed rolls nothing then; one that never meets the
// flag's leaves the flag's alone.
func TestMaintenanceWindowAnnotationOnlyNarrows(t *testing.T) {
	p := setupPace(t, map[string]string{dialect.NudgeMaintenanceWindow: "0 3 * * * 2h"}, func(o *options.Options) {
		o.MaintenanceWindow = "0 2 * * * 2h"
	})
	p.Create(nt.Deployment(p.NS, "noon", 1, map[string]string{"nudge.dev/auto": "true", dialect.NudgeMaintenanceWindow: "0 12 * * * 1h"},
		nt.EnvFrom("ConfigMap", "app")))
	p.Baselined("noon")
	p.clk.SetTime(at(p.clk.Now(), 12, 0))
	p.change(0)
	tomorrow := func(hh int) time.Time { return at(p.clk.Now(), hh, 0).AddDate(0, 0, 1) }
	p.G.Eventually(p.held()).WithTimeout(10*time.Second).Should(ContainSubstring("until "+tomorrow(3).Format(time.RFC3339)),
		"held until both windows are open: 03:00, not the flag's 02:00")
	p.G.Eventually(func() string { return p.Deployment("noon").Annotations[workload.HeldAnnotation] }).WithTimeout(10*time.Second).
		Should(ContainSubstring("until "+tomorrow(2).Format(time.RFC3339)), "its own window open, the flag's closed: held until the flag's opens")
	p.G.Expect(p.Rollouts("noon")()).To(BeZero())

	p.clk.SetTime(tomorrow(2).Add(30 * time.Minute))
	p.poke()
	p.Annotate("noon", `{"test.nudge.dev/poke":"1"}`)
	p.G.Eventually(p.Rollouts("noon")).WithTimeout(10*time.Second).Should(Equal(int64(1)),
		"its window never meets the flag's: the flag's holds alone")
	p.G.Consistently(p.Rollouts("web")).WithTimeout(2*time.Second).Should(BeZero(), "the flag's open, its own not yet")
	p.clk.SetTime(tomorrow(3).Add(time.Minute))
	p.poke()
	p.RolledTo("web", 1)
}

// Rule 15: a Namespace's window holds its workloads; with
// --allow-workload-overrides a workload's own window wins. Namespaces are
// read by a cluster-wide nudge only: this one selects the test's namespace
// by its label.
func TestMaintenanceWindowOfTheNamespace(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(at(time.Now(), 12, 0))
	e := setup(t, false, nil)
	e.G.Expect(e.K8s.Patch(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+dialect.NudgeMaintenanceWindow+`":"0 2 * * * 1h"}}}`)))).To(Succeed())
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "own", 1, map[string]string{"nudge.dev/auto": "true", dialect.NudgeMaintenanceWindow: "0 12 * * * 1h"}, nt.EnvFrom("ConfigMap", "app")))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
		o.RolloutWindow, o.Clock, o.AllowWorkloadOverrides = 0, clk, true
		o.Namespaces, o.NamespaceSelector = nil, "kubernetes.io/metadata.name="+e.NS
	})
	e.Baselined("web")
	e.Baselined("own")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = "1" })
	e.G.Eventually(e.Rollouts("own")).WithTimeout(10*time.Second).Should(Equal(int64(1)), "the workload's own window, open, wins")
	e.G.Eventually(func() string { return e.Deployment("web").Annotations[workload.HeldAnnotation] }).WithTimeout(10*time.Second).
		Should(HavePrefix(record.ReasonRolloutDeferred+" since "), "the Namespace's window, closed, holds the other")
	e.G.Expect(e.Rollouts("web")()).To(BeZero())
}
