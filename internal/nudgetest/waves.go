package nudgetest

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/workload"
)

// HaltWave makes nudge halt a wave (--max-concurrent-rollouts=1): once a
// change of the source both use has been made, it waits until nudge rolls
// canary (the first of the wave, by its priority), writes canary's status
// as the Deployment controller does when a rollout misses its progress
// deadline (ProgressDeadlineExceeded), and waits until nudge halts the
// Deployment waiting of the same namespace, which waits on the same
// content. Each wait fails t after 30 s, saying what it waited for.
func HaltWave(t *testing.T, c client.Client, canary *appsv1.Deployment, waiting string) {
	t.Helper()
	g := gomega.NewWithT(t)
	ctx := t.Context()
	g.Eventually(func() string {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(canary), canary)).To(gomega.Succeed())
		return canary.Annotations[workload.LastRolloutAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(gomega.BeEmpty(), "nudge to roll the canary %s first", canary.Name)
	g.Eventually(func() error {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(canary), canary)).To(gomega.Succeed())
		canary.Status = appsv1.DeploymentStatus{ObservedGeneration: canary.Generation, Replicas: 2, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}
		return c.Status().Update(ctx, canary)
	}).WithTimeout(30*time.Second).Should(gomega.Succeed(), "writing the status of the canary %s: its rollout missed its deadline", canary.Name)
	g.Eventually(func() string {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: canary.Namespace, Name: waiting}, d)).To(gomega.Succeed())
		return d.Annotations[fleet.HaltedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(gomega.BeEmpty(), "nudge to halt %s", waiting)
}
