package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/explain"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
)

// subPath mounts one key of a ConfigMap as a file through subPath, a mount
// the kubelet never refreshes.
func subPath(name, key string) nt.PodOption {
	return func(t *corev1.PodTemplateSpec) {
		nt.Volume("ConfigMap", name)(t)
		c := &t.Spec.Containers[0]
		c.VolumeMounts[len(c.VolumeMounts)-1].SubPath = key
	}
}

// A ConfigMap changed without nudge rolling its workloads (no nudge runs):
// explain counts the running pods that read it as env vars or through a
// subPath mount and started before the change, not those that mount it
// plainly; status lists them; once a rollout replaced them, none is counted.
func TestRotationShowsThePodsStartedBeforeTheChange(t *testing.T) {
	ctx, g, ns := namespace(t)
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"GREETING": "hello"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Deployment(ns, "env", 3, auto, nt.EnvFrom("ConfigMap", "app")))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Deployment(ns, "mounted", 1, auto, nt.Volume("ConfigMap", "app")))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Deployment(ns, "sub", 1, auto, subPath("app", "GREETING")))).To(Succeed())
	for name, n := range map[string]int{"env": 3, "mounted": 1, "sub": 1} {
		g.Eventually(pods(ctx, g, ns, name)).WithTimeout(60*time.Second).Should(HaveLen(n), "the running pods of %s", name)
	}
	// The API records times in whole seconds: change the ConfigMap in a
	// second after every pod started.
	started := latestStart(ctx, g, ns)
	g.Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).WithTimeout(3*time.Second).
		Should(BeTemporally(">", started), "a second after the pods started")
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	cm.Data["GREETING"] = "bonjour"
	g.Expect(k8s.Update(ctx, &cm)).To(Succeed())

	e := explain.Explainer{Client: k8s, Options: explain.Options{SystemNamespace: ns, KeySecret: "none"}}
	stale := func(name string) *explain.Rotation {
		w, err := e.Workload(ctx, workload.Deployment, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		return w.Rotation
	}
	r := stale("env")
	g.Expect(r.Pods).To(Equal(3))
	g.Expect(r.Sources).To(HaveLen(1))
	g.Expect(r.Sources[0].Count).To(Equal(3))
	g.Expect(r.Sources[0].Evidence).To(HavePrefix("managedFields:"))
	g.Expect(r.Sources[0].Message).To(MatchRegexp(`^3 of 3 pods started before ConfigMap %s/app changed at \S+Z: env-\S+, env-\S+, env-\S+$`, ns))
	g.Expect(stale("mounted")).To(BeNil(), "a plain volume mount is refreshed by the kubelet")
	r = stale("sub")
	g.Expect(r.Sources).To(HaveLen(1))
	g.Expect(r.Sources[0].ReadAs).To(Equal([]string{"subPath"}))
	g.Expect(r.Sources[0].Message).To(HavePrefix("1 of 1 pod started before ConfigMap " + ns + "/app changed"))

	f, err := e.Status(ctx, ns, nil)
	g.Expect(err).NotTo(HaveOccurred())
	var lagging []string
	for _, l := range f.Lagging {
		lagging = append(lagging, l.Workload)
	}
	g.Expect(lagging).To(ConsistOf("Deployment "+ns+"/env", "Deployment "+ns+"/sub"), "with --rollout-timeout 0")
	e.RolloutTimeout = time.Hour
	f, err = e.Status(ctx, ns, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Lagging).To(BeEmpty(), "within --rollout-timeout of the change")

	// A rollout, as kubectl rollout restart makes one, replaces the pods.
	old := pods(ctx, g, ns, "env")()
	var d appsv1.Deployment
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "env"}, &d)).To(Succeed())
	d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": time.Now().Format(time.RFC3339)}
	g.Expect(k8s.Update(ctx, &d)).To(Succeed())
	g.Eventually(func() bool {
		now := pods(ctx, g, ns, "env")()
		return len(now) == 3 && !slices.ContainsFunc(now, func(uid string) bool { return slices.Contains(old, uid) })
	}).WithTimeout(90*time.Second).Should(BeTrue(), "three new running pods of env, none of the old")
	g.Eventually(func() string {
		r := stale("env")
		return r.Sources[0].Message
	}).WithTimeout(30*time.Second).Should(HavePrefix("none of 3 pods started before ConfigMap "+ns+"/app changed"),
		"the pods being deleted gone")
}

// latestStart returns the latest time a container of the namespace's pods
// started.
func latestStart(ctx context.Context, g *WithT, ns string) time.Time {
	var list corev1.PodList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var at time.Time
	for _, p := range list.Items {
		for _, c := range p.Status.ContainerStatuses {
			if r := c.State.Running; r != nil && r.StartedAt.After(at) {
				at = r.StartedAt.Time
			}
		}
		if p.Status.StartTime != nil && p.Status.StartTime.After(at) {
			at = p.Status.StartTime.Time
		}
	}
	return at
}
