package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/eviction"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// evictOpts turns restarts through the Eviction API on, with timeout as
// --rollout-timeout.
func evictOpts(timeout time.Duration) func(*options.Options) {
	return func(o *options.Options) { o.EnableEviction, o.RolloutTimeout = true, timeout }
}

// evicting are the annotations of a workload that rolls on its ConfigMap's
// changes and restarts its pods by eviction.
var evicting = map[string]string{"nudge.dev/auto": "true", dialect.NudgeRolloutStrategy: "evict"}

// onDeleteSet creates the ConfigMap app, an OnDelete StatefulSet of n pods
// reading it (changed by opts) and, when budget ≥ 0, a
// PodDisruptionBudget of them allowing budget; it waits for the pods to be
// Ready and counted by the budget, and nudge's baseline.
func onDeleteSet(ctx context.Context, g *WithT, ns string, n int32, budget int, opts ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "hello"}))).To(Succeed())
	s := nt.StatefulSet(ns, "db", n, evicting, nt.EnvFrom("ConfigMap", "app"))
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	for _, o := range opts {
		o(s)
	}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	if budget >= 0 {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-budget"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntOrString(budget), Selector: s.Spec.Selector}}
		g.Expect(k8s.Create(ctx, pdb)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)).To(Succeed())
			g.Expect(pdb.Status.CurrentHealthy).To(Equal(n))
		}).WithTimeout(time.Minute).Should(Succeed(), "the budget counting every pod Ready")
	}
	g.Eventually(pods(ctx, g, ns, "db")).WithTimeout(time.Minute).Should(HaveLen(int(n)), "the StatefulSet's pods running")
	baselined(ctx, g, s)
	return s
}

func ptrIntOrString(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }

// baselined waits for nudge's baseline on obj.
func baselined(ctx context.Context, g *WithT, obj client.Object) {
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKey(workload.AppliedAnnotation))
	}).WithTimeout(30*time.Second).Should(Succeed(), "nudge's baseline")
}

// restartOf returns obj's eviction.ProgressAnnotation, "" when none.
func restartOf(ctx context.Context, g Gomega, obj client.Object) string {
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj.GetAnnotations()[eviction.ProgressAnnotation]
}

// warnings returns the reasons and notes of ns's Warning Events.
func warnings(ctx context.Context, g Gomega, ns string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

// TestEvictRestartsOnDeleteStatefulSet: a change of an OnDelete
// StatefulSet of 3 with a budget of 1 replaces every pod, each once, never
// two unavailable at once, and the restart's progress is removed.
func TestEvictRestartsOnDeleteStatefulSet(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, evictOpts(time.Minute))
	s := onDeleteSet(ctx, g, ns, 3, 1)
	watched := nt.WatchPods(t, k8s, 3, client.InNamespace(ns))
	changeApp(ctx, g, ns, "bonjour")
	once := map[string]int{"db-0": 1, "db-1": 1, "db-2": 1}
	// A pod re-created under its name within a moment may stay in the
	// budget's disruptedPods up to 2 minutes (the disruption controller's
	// deletion timeout), refusing the next eviction meanwhile.
	g.Eventually(watched.Evicted).WithTimeout(4*time.Minute).Should(Equal(once), "each pod evicted")
	g.Eventually(func(g Gomega) string { return restartOf(ctx, g, s) }).WithTimeout(time.Minute).Should(BeEmpty(), "the restart done")
	g.Consistently(watched.Evicted).WithTimeout(3*time.Second).Should(Equal(once), "each pod evicted once")
	g.Expect(watched.MostUnavailable()).To(Equal(1), "never two pods unavailable at once")
}

// TestEvictRestartsOnDeleteDaemonSet: a change of an OnDelete DaemonSet
// replaces its pod on each node, once.
func TestEvictRestartsOnDeleteDaemonSet(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, evictOpts(time.Minute))
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "hello"}))).To(Succeed())
	d := nt.DaemonSet(ns, "agent", evicting, nt.EnvFrom("ConfigMap", "app"))
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	g.Expect(k8s.Create(ctx, d)).To(Succeed())
	g.Eventually(pods(ctx, g, ns, "agent")).WithTimeout(time.Minute).Should(HaveLen(2), "a pod on each node")
	restartsEachOnce(ctx, t, g, d, "agent", 2)
}

// restartsEachOnce changes the ConfigMap app of obj's namespace once nudge
// has baselined obj, whose n pods are labelled app=name, and waits for
// each to be replaced once, one at a time, and the restart to be done.
func restartsEachOnce(ctx context.Context, t *testing.T, g *WithT, obj client.Object, name string, n int) {
	ns := obj.GetNamespace()
	baselined(ctx, g, obj)
	old := pods(ctx, g, ns, name)()
	watched := nt.WatchPods(t, k8s, n, client.InNamespace(ns))
	changeApp(ctx, g, ns, "bonjour")
	g.Eventually(pods(ctx, g, ns, name)).WithTimeout(2*time.Minute).Should(And(HaveLen(n), Not(ContainElement(BeElementOf(old)))), "every pod replaced")
	g.Eventually(func(g Gomega) string { return restartOf(ctx, g, obj) }).WithTimeout(time.Minute).Should(BeEmpty(), "the restart done")
	g.Consistently(func() int { return len(watched.Evicted()) }).WithTimeout(3*time.Second).Should(Equal(n), "each pod evicted once")
	g.Expect(watched.MostUnavailable()).To(Equal(1), "one pod at a time")
}

// TestEvictBudgetAllowingNothing: a budget that allows no disruption keeps
// every pod; nudge names it in a Warning and in the restart's progress.
func TestEvictBudgetAllowingNothing(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, evictOpts(time.Minute))
	s := onDeleteSet(ctx, g, ns, 2, 0)
	old := pods(ctx, g, ns, "db")()
	changeApp(ctx, g, ns, "bonjour")
	g.Eventually(func(g Gomega) []eventsv1.Event { return warnings(ctx, g, ns) }).WithTimeout(time.Minute).Should(ContainElement(And(
		HaveField("Reason", record.ReasonEvictionBlocked), HaveField("Note", ContainSubstring("PodDisruptionBudget db-budget")))), "a Warning naming the budget")
	g.Eventually(func(g Gomega) string { return restartOf(ctx, g, s) }).Should(ContainSubstring("blocked=db-budget"), "the budget in the progress")
	g.Consistently(pods(ctx, g, ns, "db")).WithTimeout(3*time.Second).Should(ConsistOf(old), "no pod evicted")
}

// TestEvictReplacementNeverReadyHalts: a replacement that never becomes
// Ready (its new template asks for a node that does not exist) halts the
// restart after --rollout-timeout: the other pod is never evicted.
func TestEvictReplacementNeverReadyHalts(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, evictOpts(5*time.Second))
	s := onDeleteSet(ctx, g, ns, 2, -1)
	// OnDelete: the pods keep running the old template until evicted.
	patch := []byte(`{"spec":{"template":{"spec":{"nodeSelector":{"kubernetes.io/hostname":"no-such-node"}}}}}`)
	g.Expect(k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	changeApp(ctx, g, ns, "bonjour")
	g.Eventually(func(g Gomega) string { return restartOf(ctx, g, s) }).WithTimeout(time.Minute).Should(ContainSubstring("halted=true"), "the restart halted")
	g.Eventually(func(g Gomega) []eventsv1.Event { return warnings(ctx, g, ns) }).WithTimeout(30*time.Second).Should(ContainElement(HaveField("Reason", record.ReasonRestartHalted)), "a Warning of the halt")
	g.Consistently(pods(ctx, g, ns, "db")).WithTimeout(3*time.Second).Should(HaveLen(1), "one pod left from before, the other's replacement Pending")
}

// TestEvictResumesAfterNudgeStops: nudge stopped in the middle of a
// restart, and started again, restarts each pod exactly once.
func TestEvictResumesAfterNudgeStops(t *testing.T) {
	ctx, g, ns := namespace(t)
	first := nt.Start(t, plane.Config(), ns, evictOpts(time.Minute))
	// No budget: a StatefulSet's pod re-created under its name within a
	// moment can stay in a budget's disruptedPods for up to 2 minutes, and
	// nudge's own pace is what is tested here.
	s := onDeleteSet(ctx, g, ns, 5, -1)
	watched := nt.WatchPods(t, k8s, 5, client.InNamespace(ns))
	changeApp(ctx, g, ns, "bonjour")
	g.Eventually(watched.Pods).WithTimeout(time.Minute).WithPolling(10*time.Millisecond).Should(BeNumerically(">", 5), "a first pod evicted")
	first.Stop(t)
	g.Expect(restartOf(ctx, g, s)).NotTo(BeEmpty(), "stopped in the middle of the restart")
	nt.Start(t, plane.Config(), ns, evictOpts(time.Minute))
	g.Eventually(func(g Gomega) string { return restartOf(ctx, g, s) }).WithTimeout(2*time.Minute).Should(BeEmpty(), "the restart done")
	once := map[string]int{"db-0": 1, "db-1": 1, "db-2": 1, "db-3": 1, "db-4": 1}
	g.Eventually(watched.Evicted).Should(Equal(once))
	g.Consistently(watched.Evicted).WithTimeout(3*time.Second).Should(Equal(once), "each pod evicted exactly once")
}
