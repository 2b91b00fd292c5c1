package binary

import (
	"context"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
)

// nudge stopped (SIGTERM: a rolling update of nudge, a drained node) right
// after a rollout, while the rollout's Event waits for a pause in rollouts
// (a second): the Event is written before nudge exits, not lost with it.
func TestStopWritesTheWaitingEvents(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := plane.GenerateNamespace(ctx, "bin-stop-")
	g.Expect(err).NotTo(HaveOccurred())
	p := start(t, nil, "--kubeconfig="+kubeconfig(t, ns), "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--namespaces="+ns, "--rollout-window=0")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"k": "1"}}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	dep := nudgetest.Deployment(ns, "web", 1, map[string]string{"reloader.stakater.com/auto": "true"}, nudgetest.EnvFrom("ConfigMap", "app"))
	g.Expect(k8s.Create(ctx, dep)).To(Succeed())
	key := client.ObjectKeyFromObject(dep)
	g.Eventually(func(g Gomega) string {
		g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
		return dep.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's first-sight baseline on Deployment web")

	cm.Data["k"] = "2"
	g.Expect(k8s.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, key, d)).To(Succeed())
		return d.Spec.Template.Annotations[workload.RestartedAtAnnotation]
	}).WithTimeout(30*time.Second).WithPolling(10*time.Millisecond).ShouldNot(BeEmpty(), "Deployment web rolled")
	g.Expect(syscall.Kill(p.PID(), syscall.SIGTERM)).To(Succeed())
	waiting := len(events(g, ns)) == 0
	g.Eventually(p.Exited).WithTimeout(time.Minute).Should(BeTrue(), "nudge to stop on SIGTERM")
	g.Expect(p.Err()).NotTo(HaveOccurred(), "a clean exit")

	got := events(g, ns)
	g.Expect(got).To(HaveLen(1), "the rollout's Event, written before nudge exited")
	g.Expect(got[0].Regarding.Name).To(Equal("web"))
	g.Expect(got[0].Reason).To(Equal("Rolled"))
	if waiting {
		g.Expect(p.Output()).To(ContainSubstring("Wrote the Events waiting at the stop"), "the Event was waiting at the stop, and the log says it was written then")
	} else {
		t.Log("The Event was written before the stop (the machine took more than a second to see the rollout): the stop's write was not exercised")
	}
}

// events returns the events.k8s.io Events in ns.
func events(g Gomega, ns string) []eventsv1.Event {
	l := &eventsv1.EventList{}
	g.Expect(k8s.List(context.Background(), l, client.InNamespace(ns))).To(Succeed())
	return l.Items
}
