package fleet_test

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// No workload controller runs here: a Deployment nudge rolled stays
// incomplete (its observedGeneration behind) until the test writes its
// status, as the Deployment controller would.

// waves starts nudge with --max-concurrent-rollouts n and no rollout
// window, and creates the ConfigMap app with a Deployment per name reading
// it, each with the priority given (none for 0).
func waves(t *testing.T, n int, mutate func(*options.Options), priorities map[string]int) *env {
	t.Helper()
	e := setup(t, true, func(o *options.Options) {
		o.MaxConcurrentRollouts, o.RolloutWindow = n, 0
		if mutate != nil {
			mutate(o)
		}
	})
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}))
	for _, name := range slices.Sorted(maps.Keys(priorities)) {
		a := map[string]string{"nudge.dev/auto": "true"}
		if p := priorities[name]; p != 0 {
			a[fleet.PriorityAnnotation] = strconv.Itoa(p)
		}
		e.Create(nt.Deployment(e.NS, name, 1, a, nt.EnvFrom("ConfigMap", "app")))
	}
	for name := range priorities {
		e.Baselined(name)
	}
	return e
}

// rolled returns the names of the Deployments rolled at least once.
func (e *env) rolled(names ...string) func() []string {
	return func() []string {
		var out []string
		for _, n := range names {
			if e.Templates.Count(n) > 0 {
				out = append(out, n)
			}
		}
		return out
	}
}

// complete writes the status the Deployment controller writes once a
// rollout of the Deployment is complete.
func (e *env) complete(name string) {
	e.T.Helper()
	e.setStatus(name, func(d *appsv1.Deployment) {
		r := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r}
	})
}

// exceedDeadline writes the status of a Deployment whose rollout made no
// progress within its progressDeadlineSeconds.
func (e *env) exceedDeadline(name string) {
	e.T.Helper()
	e.setStatus(name, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}
	})
}

func (e *env) setStatus(name string, set func(*appsv1.Deployment)) {
	e.T.Helper()
	e.G.Eventually(func() error {
		d := e.Deployment(name)
		set(d)
		return suite.K8s.Status().Update(e.Ctx, d)
	}).WithTimeout(10*time.Second).Should(Succeed(), "writing the status of Deployment %s", name)
}

func (e *env) change(value string) {
	e.T.Helper()
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = value })
}

// Waves: never more rollouts in flight than --max-concurrent-rollouts; the
// waiting ones roll as slots free, higher nudge.dev/rollout-priority first,
// each exactly once.
func TestWavesBoundRolloutsInFlight(t *testing.T) {
	e := waves(t, 2, nil, map[string]int{"a": 0, "b": 0, "c": 5, "d": 10, "e": 10})
	all := []string{"a", "b", "c", "d", "e"}
	e.change("2")
	e.G.Eventually(e.rolled(all...)).WithTimeout(20*time.Second).Should(ConsistOf("d", "e"), "the two of highest priority to roll first")
	e.G.Consistently(e.rolled(all...)).WithTimeout(3*time.Second).Should(HaveLen(2), "no third rollout while two are in flight")

	e.complete("d")
	e.G.Eventually(e.rolled(all...)).WithTimeout(20*time.Second).Should(ConsistOf("c", "d", "e"), "the next in priority to take the freed slot")
	e.G.Consistently(e.rolled(all...)).WithTimeout(3*time.Second).Should(HaveLen(3), "one slot freed, one rollout")

	for _, n := range []string{"e", "c"} {
		e.complete(n)
	}
	e.G.Eventually(e.rolled(all...)).WithTimeout(20*time.Second).Should(HaveLen(5), "the last two to roll as slots free")
	e.G.Consistently(e.completeRolled(all...)).WithTimeout(3*time.Second).Should(
		Equal(map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}), "each rolled exactly once")
}

// Halt: a rollout that fails holds every workload waiting on the same
// content, with the annotation, a RolloutHalted Event and an alert; removing
// the annotation resumes one; a new change resumes the rest.
func TestHaltOnFailedRollout(t *testing.T) {
	h := nt.NewHook(t)
	e := waves(t, 1, func(o *options.Options) {
		o.Alert = alert.Config{Enabled: true, Sink: alert.SinkJSON, WebhookURL: h.URL}
	}, map[string]int{"canary": 10, "a": 0, "b": 0, "c": 0})
	others := []string{"a", "b", "c"}
	e.change("bad")
	e.RolledTo("canary", 1)
	e.G.Expect(e.rolled(others...)()).To(BeEmpty(), "the others wait for the canary")

	e.exceedDeadline("canary")
	for _, n := range others {
		e.G.Eventually(func() string { return e.Deployment(n).Annotations[fleet.HaltedAnnotation] }).WithTimeout(20*time.Second).Should(
			And(HavePrefix("ConfigMap/"+e.NS+"/app="), HaveSuffix(" Deployment/"+e.NS+"/canary")), "Deployment %s held for the content that failed", n)
		e.G.Eventually(e.Events(n, record.ReasonRolloutHalted)).WithTimeout(10*time.Second).Should(
			ContainElement(HaveField("Note", ContainSubstring("Deployment "+e.NS+"/canary"))), "a RolloutHalted Event naming the canary on %s", n)
	}
	e.G.Eventually(h.Received).WithTimeout(10*time.Second).Should(ContainElement(And(
		ContainSubstring(`"halted"`), ContainSubstring("canary"), Not(ContainSubstring("bad")))), "an alert of the halt")
	e.G.Consistently(e.rolled(others...)).WithTimeout(3*time.Second).Should(BeEmpty(), "the held ones never roll")
	e.G.Expect(e.Events("canary", record.ReasonRolloutFailed)()).NotTo(BeEmpty(), "a RolloutFailed Event on the canary")

	e.Annotate("a", `{"`+fleet.HaltedAnnotation+`":null}`)
	e.RolledTo("a", 1)
	e.G.Expect(e.rolled("b", "c")()).To(BeEmpty(), "removing one hold resumes that one only")
	e.complete("a")

	e.change("fixed")
	everyone := []string{"canary", "a", "b", "c"}
	e.G.Eventually(e.completeRolled(everyone...)).WithTimeout(40*time.Second).Should(
		Equal(map[string]int64{"canary": 2, "a": 2, "b": 1, "c": 1}), "the new change to roll everyone, one at a time")
	for _, n := range []string{"b", "c"} {
		e.G.Expect(e.Deployment(n).Annotations).NotTo(HaveKey(fleet.HaltedAnnotation), "the hold of %s removed with its rollout", n)
	}
	e.G.Consistently(e.completeRolled(everyone...)).WithTimeout(3*time.Second).Should(
		Equal(map[string]int64{"canary": 2, "a": 2, "b": 1, "c": 1}), "no further rollout")
}

// A rollout that ends a halt removes it in its own patch: with a slot free
// for it, a halted workload rolls for a new change, and no later write is
// needed (nothing would bring it: the rollout's own event is dropped).
func TestRolloutRemovesTheHaltItEnds(t *testing.T) {
	e := waves(t, 1, nil, map[string]int{"canary": 10, "a": 0})
	e.change("bad")
	e.RolledTo("canary", 1)
	e.exceedDeadline("canary")
	e.G.Eventually(func() map[string]string { return e.Deployment("a").Annotations }).WithTimeout(20*time.Second).Should(
		HaveKey(fleet.HaltedAnnotation), "a held for the content that failed")
	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.MaxConcurrentRollouts, o.RolloutWindow = 2, 0 })
	events := nt.Watch(t, suite.K8s, &appsv1.DeploymentList{}, client.InNamespace(e.NS))
	e.change("fixed")
	var rolled map[string]string // the annotations a's rollout wrote
	e.G.Eventually(func() map[string]string {
		for rolled == nil {
			select {
			case ev := <-events:
				if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Name == "a" && d.Annotations[workload.LastRolloutAnnotation] != "" {
					rolled = d.Annotations
				}
			default:
				return nil
			}
		}
		return rolled
	}).WithTimeout(20*time.Second).ShouldNot(BeNil(), "a rolled for the new change")
	e.G.Expect(rolled).NotTo(HaveKey(fleet.HaltedAnnotation), "the hold removed by the rollout's own write")
}

// completeRolled completes the rollout of each named Deployment rolled and
// not complete yet, as the Deployment controller would, and returns how many
// times each was rolled.
func (e *env) completeRolled(names ...string) func() map[string]int64 {
	return func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range names {
			if d := e.Deployment(n); d.Status.ObservedGeneration < d.Generation && e.Templates.Count(n) > 0 {
				e.complete(n)
			}
			out[n] = e.Templates.Count(n)
		}
		return out
	}
}

// --rollout-timeout: a rollout not complete in time fails, and halts too.
func TestRolloutTimeoutHalts(t *testing.T) {
	e := waves(t, 1, func(o *options.Options) { o.RolloutTimeout = 2 * time.Second }, map[string]int{"first": 1, "second": 0})
	e.change("2")
	e.RolledTo("first", 1)
	e.G.Eventually(func() map[string]string { return e.Deployment("second").Annotations }).WithTimeout(20*time.Second).Should(
		HaveKeyWithValue(fleet.HaltedAnnotation, HaveSuffix(" Deployment/"+e.NS+"/first")), "second held once first timed out")
	e.G.Eventually(e.Events("first", record.ReasonRolloutFailed)).WithTimeout(10 * time.Second).Should(
		ContainElement(HaveField("Note", ContainSubstring("not complete within 2s"))))
	e.RolledTo("second", 0)
}

// A restarted nudge rebuilds its waves from the cluster: the rollout in
// flight still takes its slot, the waiting workload is neither forgotten
// nor rolled early, and a hold written before the restart still holds.
func TestWavesSurviveRestart(t *testing.T) {
	e := waves(t, 1, nil, map[string]int{"a": 2, "b": 1, "c": 0})
	e.change("2")
	e.RolledTo("a", 1)
	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.MaxConcurrentRollouts, o.RolloutWindow = 1, 0 })
	e.G.Consistently(e.rolled("b", "c")).WithTimeout(4*time.Second).Should(BeEmpty(), "a's rollout still in flight after the restart")
	e.complete("a")
	e.RolledTo("b", 1)
	e.G.Expect(e.rolled("c")()).To(BeEmpty())

	e.exceedDeadline("b")
	e.G.Eventually(func() map[string]string { return e.Deployment("c").Annotations }).WithTimeout(20*time.Second).Should(
		HaveKey(fleet.HaltedAnnotation), "c held after b failed")
	e.Nudge.Stop(t)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.MaxConcurrentRollouts, o.RolloutWindow = 1, 0 })
	e.G.Consistently(e.rolled("c")).WithTimeout(3*time.Second).Should(BeEmpty(), "the hold outlives the restart")
	e.Annotate("c", `{"`+fleet.HaltedAnnotation+`":null}`)
	e.RolledTo("c", 1)
	for _, n := range []string{"a", "b"} {
		e.G.Expect(e.Templates.Count(n)).To(BeEquivalentTo(1), "Deployment %s rolled once across the restarts", n)
	}
}

// A malformed priority is a Warning, counted as 0.
func TestMalformedPriorityWarns(t *testing.T) {
	e := waves(t, 1, nil, map[string]int{"web": 0})
	e.Annotate("web", `{"`+fleet.PriorityAnnotation+`":"high"}`)
	e.change("2")
	e.G.Eventually(e.Events("web", record.ReasonMalformedAnnotation)).WithTimeout(10 * time.Second).Should(
		ContainElement(HaveField("Note", ContainSubstring(fleet.PriorityAnnotation))))
	e.RolledTo("web", 1)
}

// With --max-concurrent-rollouts unset nudge writes nothing of waves.
func TestNoWavesWritesNothingOfThem(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "api", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.Baselined("api")
	e.change("2")
	e.RolledTo("web", 1)
	e.RolledTo("api", 1)
	e.G.Expect(e.Deployment("web").Annotations).NotTo(HaveKey(fleet.RolledForAnnotation))
	var d appsv1.Deployment
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: "api"}, &d)).To(Succeed())
	e.G.Expect(d.Annotations).NotTo(HaveKey(fleet.RolledForAnnotation))
}

// TestOnDeleteRolloutFreesItsSlotWhenObserved: with N = 1, a StatefulSet or
// DaemonSet with updateStrategy OnDelete, whose controller replaces no pod
// by itself, takes a slot when nudge rolls it and frees it once its status
// shows the new generation observed; its pods still on the old revision, it
// fails nothing and halts nothing past --rollout-timeout.
func TestOnDeleteRolloutFreesItsSlotWhenObserved(t *testing.T) {
	t.Parallel()
	tests := map[string]slotCase{
		"StatefulSet": {
			workload: func(ns string) client.Object {
				s := nt.StatefulSet(ns, "w", 2, first, nt.EnvFrom("ConfigMap", "app"))
				s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
				return s
			},
			list: &appsv1.StatefulSetList{},
			done: func(o client.Object) {
				s := o.(*appsv1.StatefulSet)
				s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
					CurrentReplicas: 2, CurrentRevision: "w-1", UpdateRevision: "w-2"}
			},
		},
		"DaemonSet": {
			workload: func(ns string) client.Object {
				d := nt.DaemonSet(ns, "w", first, nt.EnvFrom("ConfigMap", "app"))
				d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
				return d
			},
			list: &appsv1.DaemonSetList{},
			done: func(o client.Object) {
				d := o.(*appsv1.DaemonSet)
				d.Status = appsv1.DaemonSetStatus{ObservedGeneration: d.Generation, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2,
					NumberReady: 2, NumberAvailable: 2}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { tc.run(t) })
	}
}

// TestPartitionedRolloutFreesItsSlot: with N = 1, a StatefulSet of 3
// replicas with a rolling update partition of 2, whose controller replaces
// only the pod of ordinal 2, takes a slot when nudge rolls it, keeps it
// while that pod is not updated, frees it once it is and every replica is
// ready, and fails nothing and halts nothing past --rollout-timeout.
func TestPartitionedRolloutFreesItsSlot(t *testing.T) {
	status := func(updated int32) func(client.Object) {
		return func(o client.Object) {
			s := o.(*appsv1.StatefulSet)
			s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				CurrentReplicas: 3 - updated, UpdatedReplicas: updated, CurrentRevision: "w-1", UpdateRevision: "w-2"}
		}
	}
	slotCase{
		workload: func(ns string) client.Object {
			s := nt.StatefulSet(ns, "w", 3, first, nt.EnvFrom("ConfigMap", "app"))
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
			return s
		},
		list:    &appsv1.StatefulSetList{},
		pending: status(0),
		done:    status(1),
	}.run(t)
}

// first opts a workload in with a priority above the Deployments' of
// slotCase, so that it takes the first free slot.
var first = map[string]string{"nudge.dev/auto": "true", fleet.PriorityAnnotation: "10"}

// slotCase is a workload w, of a kind whose controller leaves some pods or
// all to the user, rolled in waves of one before the Deployments b and c.
type slotCase struct {
	workload func(ns string) client.Object
	list     client.ObjectList // w's kind, for counting its rollouts
	// pending, when set, writes the status of w's controller observing the
	// rollout, with pods it will replace not yet replaced; done the status
	// once it has done what it does by itself.
	pending, done func(client.Object)
}

func (tc slotCase) run(t *testing.T) {
	const timeout = 8 * time.Second
	e := waves(t, 1, func(o *options.Options) { o.RolloutTimeout = timeout }, map[string]int{"b": 0, "c": 0})
	tw := nt.WatchTemplatesOf(t, suite.K8s, e.NS, tc.list)
	w := tc.workload(e.NS)
	e.Create(w)
	e.BaselinedObj(w)
	e.change("2")
	// Across kinds the first wave is ranked as the workloads arrive: a
	// Deployment may take the slot before w, and is completed.
	e.G.Eventually(func() int64 {
		e.completeRolled("b", "c")()
		return tw.Count("w")
	}).WithTimeout(20*time.Second).Should(Equal(int64(1)), "%T w to be rolled", w)
	before := e.rolled("b", "c")()
	e.G.Expect(len(before)).To(BeNumerically("<=", 1), "at most one Deployment rolled before w: %v", before)
	e.G.Consistently(e.rolled("b", "c")).WithTimeout(1500*time.Millisecond).Should(Equal(before), "w's rollout to take the one slot")
	if tc.pending != nil {
		e.setStatusOf(w, tc.pending)
		e.G.Consistently(e.rolled("b", "c")).WithTimeout(1500*time.Millisecond).Should(Equal(before),
			"w to keep its slot while a pod its controller replaces is not replaced")
	}
	e.setStatusOf(w, tc.done)
	e.G.Eventually(e.completeRolled("b", "c")).WithTimeout(20*time.Second).Should(
		Equal(map[string]int64{"b": 1, "c": 1}), "the Deployments to roll once w's controller has done what it does by itself")

	at, err := time.Parse(time.RFC3339Nano, w.GetAnnotations()[workload.LastRolloutAnnotation])
	e.G.Expect(err).NotTo(HaveOccurred(), "w's nudge.dev/last-rollout")
	past := max(time.Until(at.Add(timeout))+2*time.Second, 3*time.Second)
	e.G.Consistently(func() []string {
		var out []string
		for _, n := range []string{"b", "c"} {
			if h, ok := e.Deployment(n).Annotations[fleet.HaltedAnnotation]; ok {
				out = append(out, n+": "+h)
			}
		}
		out = append(out, notes(e.Events("w", record.ReasonRolloutFailed)())...)
		return out
	}).WithTimeout(past).Should(BeEmpty(), "no RolloutFailed Event on w and no hold, past --rollout-timeout")
	e.G.Expect(tw.Count("w")).To(BeEquivalentTo(1), "w rolled once")
	e.G.Expect(e.completeRolled("b", "c")()).To(Equal(map[string]int64{"b": 1, "c": 1}), "b and c rolled once each")
}

// setStatusOf writes obj's status as set makes it, obj read again first.
func (e *env) setStatusOf(obj client.Object, set func(client.Object)) {
	e.T.Helper()
	e.G.Eventually(func() error {
		if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		set(obj)
		return suite.K8s.Status().Update(e.Ctx, obj)
	}).WithTimeout(10*time.Second).Should(Succeed(), "writing the status of %T %s", obj, obj.GetName())
}

// notes returns the notes of events.
func notes(events []eventsv1.Event) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Reason+": "+ev.Note)
	}
	return out
}
