package eviction_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// onDelete creates an OnDelete StatefulSet of n pods and a
// PodDisruptionBudget of them allowing maxUnavailable, and waits for its
// pods to be Ready and the budget to count them.
func onDelete(ctx context.Context, g *WithT, ns, name string, n int32, maxUnavailable int) *appsv1.StatefulSet {
	s := nt.StatefulSet(ns, name, n, nil)
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{IntVal: int32(maxUnavailable)},
			Selector:       s.Spec.Selector,
		},
	}
	g.Expect(k8s.Create(ctx, budget)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(budget), budget)).To(Succeed())
		g.Expect(budget.Status.ObservedGeneration).To(Equal(budget.Generation))
		g.Expect(budget.Status.CurrentHealthy).To(Equal(n))
	}).WithTimeout(time.Minute).Should(Succeed(), "the StatefulSet's pods Ready and counted by the budget")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	return s
}

func podsOf(ctx context.Context, g Gomega, s *appsv1.StatefulSet) []eviction.Pod {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	g.Expect(err).NotTo(HaveOccurred())
	pods, err := eviction.PodsOf(ctx, k8s, s.Namespace, sel, s.UID)
	g.Expect(err).NotTo(HaveOccurred())
	return pods
}

// TestPlanOnThePlaneReplacesEachPodOnce: the plan, the LIST and the
// eviction together restart an OnDelete StatefulSet of 3 whose budget
// allows 1: each pod from before the change is evicted once, its
// replacement is Ready before the next, never two are unavailable at once.
func TestPlanOnThePlaneReplacesEachPodOnce(t *testing.T) {
	ctx, g, ns := namespace(t)
	s := onDelete(ctx, g, ns, "db", 3, 1)
	before := map[string]bool{}
	for _, p := range podsOf(ctx, g, s) {
		before[string(p.UID)] = true
	}
	g.Expect(before).To(HaveLen(3))
	watched := nt.WatchPods(t, k8s, 3, client.InNamespace(ns))

	progress := eviction.Progress{Since: time.Now(), Pods: 3}
	evictions := 0
	g.Eventually(func(g Gomega) {
		plan := eviction.PlanOf(eviction.Input{Pods: podsOf(ctx, g, s), Progress: progress, Want: 3, Now: time.Now(), Timeout: time.Minute})
		g.Expect(plan.Step).NotTo(Equal(eviction.Stuck), "a replacement not Ready within a minute")
		for _, p := range plan.Evict {
			g.Expect(eviction.EvictPod(ctx, k8s, ns, p.Name, p.UID)).To(Succeed())
			g.Expect(before).To(HaveKey(string(p.UID)), "only a pod from before the change is evicted")
			delete(before, string(p.UID))
			progress.Evicted = time.Now()
			evictions++
		}
		g.Expect(plan.Step).To(Equal(eviction.Done))
		// A pod re-created under its name within a moment may stay in the
		// budget's disruptedPods up to 2 minutes (the disruption
		// controller's deletion timeout): its 429 is retried meanwhile.
	}).WithTimeout(4*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "every pod from before the change replaced")
	g.Expect(evictions).To(Equal(3), "each pod evicted once")
	g.Expect(before).To(BeEmpty())
	g.Expect(watched.MostUnavailable()).To(Equal(1), "never two pods unavailable at once, one while it was replaced")
	g.Eventually(watched.Evicted).Should(Equal(map[string]int{"db-0": 1, "db-1": 1, "db-2": 1}), "each pod evicted once")
}

// TestBudgetAllowingNothingIsNamed: a budget that allows no disruption
// refuses the eviction with a *Blocked that names it, and the pod stays.
func TestBudgetAllowingNothingIsNamed(t *testing.T) {
	ctx, g, ns := namespace(t)
	s := onDelete(ctx, g, ns, "queue", 2, 0)
	pods := podsOf(ctx, g, s)
	var blocked *eviction.Blocked
	g.Expect(errors.As(eviction.EvictPod(ctx, k8s, ns, pods[0].Name, pods[0].UID), &blocked)).To(BeTrue(), "the eviction refused")
	g.Expect(blocked.Budget).To(Equal("queue-budget"))
	g.Expect(blocked.Error()).To(ContainSubstring("PodDisruptionBudget queue-budget"))
	g.Consistently(func(g Gomega) {
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: pods[0].Name}, &p)).To(Succeed())
		g.Expect(p.UID).To(Equal(pods[0].UID))
		g.Expect(p.DeletionTimestamp).To(BeNil())
	}).WithTimeout(3*time.Second).Should(Succeed(), "the pod the budget kept")
}

// TestEvictionGuardedByUID: a pod gone, or re-created under its name, counts
// as evicted, and its successor is not evicted in its place.
func TestEvictionGuardedByUID(t *testing.T) {
	ctx, g, ns := namespace(t)
	s := onDelete(ctx, g, ns, "cache", 1, 1)
	first := podsOf(ctx, g, s)[0]
	g.Expect(eviction.EvictPod(ctx, k8s, ns, first.Name, first.UID)).To(Succeed())
	var second eviction.Pod
	g.Eventually(func(g Gomega) {
		pods := podsOf(ctx, g, s)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].UID).NotTo(Equal(first.UID))
		g.Expect(pods[0].Ready).To(BeTrue())
		second = pods[0]
	}).WithTimeout(time.Minute).Should(Succeed(), "the StatefulSet's new pod under the old name, Ready")
	// The API server checks the budget before the UID: let it count the
	// successor, as a LIST just before an eviction does. The evicted pod's
	// name may stay in the budget's disruptedPods up to 2 minutes (the
	// disruption controller's deletion timeout) when its successor comes
	// under that name at once.
	g.Eventually(func(g Gomega) {
		var b policyv1.PodDisruptionBudget
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache-budget"}, &b)).To(Succeed())
		g.Expect(b.Status.DisruptionsAllowed).To(BeNumerically("==", 1))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "the budget counting the successor")
	g.Expect(eviction.EvictPod(ctx, k8s, ns, first.Name, first.UID)).To(Succeed(), "the pod asked for is gone")
	g.Consistently(func(g Gomega) {
		g.Expect(podsOf(ctx, g, s)).To(ConsistOf(HaveField("UID", second.UID)))
	}).WithTimeout(3*time.Second).Should(Succeed(), "the successor not evicted")
	g.Expect(eviction.EvictPod(ctx, k8s, ns, "never-was", "")).To(Succeed(), "a pod that is not there")
}

// TestPodsOfReadsOnlyTheOwnersPods: a pod the selector matches but another
// owner (or none) controls is not the owner's.
func TestPodsOfReadsOnlyTheOwnersPods(t *testing.T) {
	ctx, g, ns := namespace(t)
	s := onDelete(ctx, g, ns, "web", 2, 1)
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", Labels: map[string]string{"app": "web"}},
		Spec: nt.Template("web").Spec}
	g.Expect(k8s.Create(ctx, stray)).To(Succeed())
	g.Expect(podsOf(ctx, g, s)).To(HaveLen(2))
	all, err := eviction.PodsOf(ctx, k8s, ns, labels.Everything(), stray.UID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(BeEmpty(), "a bare pod has no controller: it is nobody's")
}
