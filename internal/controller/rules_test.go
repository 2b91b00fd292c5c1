package controller_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

var auto = map[string]string{"nudge.dev/auto": "true"}

// Rule 8: only what the workload reads counts.
func TestOnlyReadKeysCount(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1", "b": "2"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvKey("ConfigMap", "app", "a", false)))
	e.Baselined("web")

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["b"] = "changed" })
	e.RolledTo("web", 0)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "changed" })
	e.RolledTo("web", 1)
}

// Rule 3: installing nudge over annotated workloads rolls nothing.
func TestFirstSightNeverRolls(t *testing.T) {
	e := setup(t, false, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Secret(e.NS, "db", map[string]string{"password": "p"}))
	for _, name := range []string{"one", "two", "three"} {
		e.Create(nt.Deployment(e.NS, name, 1, auto, nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")))
	}
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, nil)
	for _, name := range []string{"one", "two", "three"} {
		e.Baselined(name)
	}
	for _, name := range []string{"one", "two", "three"} {
		e.RolledTo(name, 0)
	}
}

// Rule 3: a workload that opts out and in again is first sight: a change
// made while it was out is baselined, not rolled.
func TestOptingInAgainNeverRolls(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")

	e.Annotate("web", `{"nudge.dev/auto":null}`)
	e.G.Eventually(func() map[string]string { return e.Deployment("web").Labels }).WithTimeout(10*time.Second).
		ShouldNot(HaveKey(workload.SealLabel), "nudge to drop its state from the Deployment that opted out")
	e.G.Expect(e.Deployment("web").Annotations).NotTo(HaveKey(workload.AppliedAnnotation))
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 0)

	e.Annotate("web", `{"nudge.dev/auto":"true"}`)
	e.Baselined("web")
	e.RolledTo("web", 0)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	e.RolledTo("web", 1)
}

// A mistyped opt-in is not an opt-out: nudge keeps its state, so a change
// made before the annotation is mended still rolls once it is.
func TestMistypedOptInKeepsState(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")

	e.Annotate("web", `{"nudge.dev/auto":"yes"}`)
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 0)
	e.G.Expect(e.Deployment("web").Labels).To(HaveKey(workload.SealLabel), "the state kept")

	e.Annotate("web", `{"nudge.dev/auto":"true"}`)
	e.RolledTo("web", 1)
}

// Rule 4: a change made while nudge was down is rolled once when it starts.
func TestChangeWhileDownIsRolledAtStart(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.Nudge.Stop(t)

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "no rollout while nudge is down")
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, nil)
	e.RolledTo("web", 1)
}

// Rule 5: a deleted required source rolls nothing and says so; its return
// with the same content rolls nothing, with other content once.
func TestDeletedRequiredSource(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.Volume("Secret", "db")))
	e.Baselined("web")

	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
	e.G.Eventually(e.Events("web", record.ReasonSourceMissing)).WithTimeout(10*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("Secret "+e.NS+"/db"))), "a Warning naming the missing Secret")
	e.RolledTo("web", 0)

	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}))
	e.RolledTo("web", 0)

	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
	e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero())
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p2"}))
	e.RolledTo("web", 1)

	var seen int32
	for _, ev := range e.Events("web", record.ReasonSourceMissing)() {
		e.G.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
		seen++
		if ev.Series != nil {
			seen += ev.Series.Count - 1
		}
	}
	e.G.Expect(seen).To(Equal(int32(2)), "one Warning per disappearance")
}

// Rule 5: an optional source that appears or disappears is a change.
func TestOptionalSourceAppearsAndDisappears(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.Deployment(e.NS, "web", 1, auto, nt.EnvKey("ConfigMap", "flags", "beta", true)))
	e.Baselined("web")

	e.Create(nt.ConfigMap(e.NS, "flags", map[string]string{"beta": "on"}))
	e.RolledTo("web", 1)
	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.ConfigMap(e.NS, "flags", nil))).To(Succeed())
	e.RolledTo("web", 2)
	e.G.Expect(e.Events("web", record.ReasonSourceMissing)()).To(BeEmpty(), "no Warning for an optional source")
}

// Rule 5 for a source an annotation names and the pod spec does not read: its
// pods start without it, so, as in Reloader, its deletion rolls nothing, holds
// nothing and says so; its return with other content rolls once.
func TestDeletedNamedSource(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}),
		nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{
			"secret.reloader.stakater.com/reload": "db", "reloader.stakater.com/auto": "true",
		}, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")

	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
	e.G.Eventually(e.Events("web", record.ReasonSourceMissing)).WithTimeout(10*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("Named Secret "+e.NS+"/db"))), "a Warning naming the missing Secret")
	e.RolledTo("web", 0)

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}))
	e.RolledTo("web", 1)
	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p2"}))
	e.RolledTo("web", 2)
}

// Rule 1: a burst of changes gives at most two rollouts, the last after the
// last change, once the sources are quiet. The quiet gap is a second with
// these windows: a shorter one (window 2s, 400ms) splits the burst when the
// machine is loaded enough that the test's own writes come further apart.
func TestBurstGivesAtMostTwoRollouts(t *testing.T) {
	for _, window := range []time.Duration{5 * time.Second, time.Hour} {
		t.Run(window.String(), func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RolloutWindow = window })
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}),
				nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
			e.Baselined("web")

			var last time.Time
			for i := range 10 {
				e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = string(rune('a' + i)) })
				last = time.Now()
				time.Sleep(50 * time.Millisecond) // the spacing of the burst under test, not a wait
			}
			e.G.Eventually(e.Rollouts("web")).WithTimeout(20*time.Second).Should(BeNumerically(">=", 1), "a first rollout")
			e.G.Eventually(func() time.Time {
				t, _ := time.Parse(time.RFC3339Nano, e.Deployment("web").Spec.Template.Annotations[workload.RestartedAtAnnotation])
				return t
			}).WithTimeout(10*time.Second).Should(BeTemporally(">=", last.Add(-200*time.Millisecond)),
				"a rollout after the last change (the first rollout came with the first change, 450 ms or more before)")
			e.G.Consistently(e.Rollouts("web")).WithTimeout(4*time.Second).Should(BeNumerically("<=", 2), "at most two rollouts")
		})
	}
}

// Rule 1: a steady stream of changes, each workload's source changing again
// once its last change rolled, rolls every change on its own. The window
// is an hour: a change that waited for it would never roll here. Each
// Deployment also reads a ConfigMap that never changes.
func TestSteadyStreamRollsEveryChange(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = time.Hour })
	names := []string{"a", "b", "c", "d"}
	e.Create(nt.ConfigMap(e.NS, "common", map[string]string{"c": "1"}))
	for _, n := range names {
		e.Create(nt.ConfigMap(e.NS, n, map[string]string{"n": "0"}),
			nt.Deployment(e.NS, n, 1, auto, nt.EnvFrom("ConfigMap", n), nt.EnvFrom("ConfigMap", "common")))
	}
	for _, n := range names {
		e.Baselined(n)
	}
	const rounds = 4
	for round := int64(1); round <= rounds; round++ {
		for _, n := range names {
			e.UpdateConfigMap(n, func(c *corev1.ConfigMap) { c.Data["n"] = strconv.FormatInt(round, 10) })
		}
		for _, n := range names {
			e.G.Eventually(e.Rollouts(n)).WithTimeout(10*time.Second).Should(BeNumerically(">=", round),
				"Deployment %s rolled for change %d", n, round)
		}
	}
	for _, n := range names {
		e.G.Consistently(e.Rollouts(n)).WithTimeout(3*time.Second).Should(Equal(int64(rounds)),
			"Deployment %s rolled once per change, none doubled", n)
	}
}

// Rule 1 under churn: Deployments come and go while the ConfigMap they share
// changes; every Deployment alive at a change rolls for it, once. The window
// is an hour: a change that waited for it would never roll here.
func TestChurnRollsEveryDeploymentAliveAtAChange(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = time.Hour })
	e.Create(nt.ConfigMap(e.NS, "shared", map[string]string{"n": "0"}))
	want := map[string]int64{} // rollouts expected, per Deployment alive
	var alive []string
	for i := range 6 {
		name := "web-" + strconv.Itoa(i)
		e.Create(nt.Deployment(e.NS, name, 1, auto, nt.EnvFrom("ConfigMap", "shared")))
		e.Baselined(name)
		alive = append(alive, name)
		want[name] = 0

		e.UpdateConfigMap("shared", func(c *corev1.ConfigMap) { c.Data["n"] = strconv.Itoa(i + 1) })
		for _, n := range alive {
			want[n]++
			e.G.Eventually(e.Rollouts(n)).WithTimeout(10*time.Second).Should(BeNumerically(">=", want[n]),
				"Deployment %s, alive at change %d, rolled for it", n, i+1)
		}
		if len(alive) == 3 {
			gone := alive[0]
			alive = alive[1:]
			e.G.Expect(e.Rollouts(gone)()).To(Equal(want[gone]), "Deployment %s rolled once per change while alive", gone)
			e.G.Expect(suite.K8s.Delete(e.Ctx, e.Deployment(gone))).To(Succeed())
			delete(want, gone)
		}
	}
	for _, n := range alive {
		e.G.Consistently(e.Rollouts(n)).WithTimeout(3*time.Second).Should(Equal(want[n]),
			"Deployment %s rolled once per change, none doubled", n)
	}
}

// The window is also an annotation, overriding the flag with
// --allow-workload-overrides.
func TestWindowAnnotationOverridesFlag(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow, o.AllowWorkloadOverrides = time.Hour, true })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"n": "0"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"nudge.dev/auto": "true", "nudge.dev/rollout-window": "0s"},
			nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = "1" })
	e.RolledTo("web", 1)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["n"] = "2" })
	e.RolledTo("web", 2)
}

// Rule 9: no Secret value, nor an unkeyed digest of one, in nudge's logs,
// Events, or anything nudge wrote.
func TestSecretValuesNeverLeak(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.LogLevel = "trace" })
	value := "s3cr3t-" + e.NS
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": value}),
		nt.Deployment(e.NS, "web", 1, auto, nt.Volume("Secret", "db")))
	e.Baselined("web")
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte(value + "-2") })
	e.RolledTo("web", 1)
	e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
	e.G.Eventually(e.Events("web", record.ReasonSourceMissing)).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())

	var events eventsv1.EventList
	e.G.Expect(suite.K8s.List(e.Ctx, &events, client.InNamespace(e.NS))).To(Succeed())
	written, err := json.Marshal([]any{e.Deployment("web"), events.Items})
	e.G.Expect(err).NotTo(HaveOccurred())
	haystack := string(written) + e.Nudge.Logs()
	e.G.Expect(e.Nudge.Logs()).To(ContainSubstring("Changes detected in 'db' of type 'SECRET' in namespace '" + e.NS + "'"))
	for _, v := range []string{value, value + "-2"} {
		sum := sha256.Sum256([]byte(v))
		for _, form := range []string{
			v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString(sum[:]),
			base64.StdEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:]),
		} {
			e.G.Expect(strings.Contains(haystack, form)).To(BeFalse(), "found %q (a form of the Secret's value)", form)
		}
	}
}

// Bad input gets one Warning per cause, not one per reconcile.
func TestMalformedAnnotationWarnsOnce(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, map[string]string{"reloader.stakater.com/auto": "yes", "nudge.dev/configmaps": "app"},
			nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10 * time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("reloader.stakater.com/auto"))))
	for i := range 3 { // three more reconciles of the same workload
		d := e.Deployment("web")
		d.Annotations["touch"] = string(rune('a' + i))
		e.G.Expect(suite.K8s.Update(e.Ctx, d)).To(Succeed())
	}
	e.G.Consistently(func() []eventsv1.Event { return e.Events("web", record.ReasonMalformedAnnotation)() }).
		WithTimeout(3*time.Second).Should(ConsistOf(HaveField("Series", BeNil())), "a single Warning, never repeated")
	// The well-formed annotation still works.
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}

// Every rollout counts in nudge_rollouts_total{kind}.
func TestRolloutsAreCounted(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	count := func() float64 {
		families, err := metrics.Registry.Gather()
		e.G.Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != "nudge_rollouts_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "kind" && l.GetValue() == "StatefulSet" {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	before := count() // other tests running in parallel may add to it too
	sts := nt.StatefulSet(e.NS, "db", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), sts)
	e.BaselinedObj(sts)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(count).WithTimeout(10*time.Second).Should(BeNumerically(">=", before+1), "nudge_rollouts_total{kind=StatefulSet} up")
}
