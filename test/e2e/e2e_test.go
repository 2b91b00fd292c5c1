// Package e2e tests nudge on the full local plane (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, kwok nodes), asserting on what a
// user sees: new ReplicaSets and revisions, replaced pods, Events.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
)

var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) {
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.Cluster, Nodes: 2}, func(p *testbed.Plane) {
		plane = p
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		c, err := client.NewWithWatch(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}

var auto = map[string]string{"reloader.stakater.com/auto": "true"}

func namespace(t *testing.T) (context.Context, *WithT, string) {
	t.Helper()
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "e2e-")
	g.Expect(err).NotTo(HaveOccurred())
	// The nodes hold 110 pods each: a test's pods must go with it, or runs
	// with -count run out of room and their pods stay Pending.
	t.Cleanup(func() {
		gone := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := k8s.Delete(context.Background(), gone); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	return t.Context(), g, ns
}

// pods returns the UIDs of the running pods labelled app=name (a
// StatefulSet's new pods keep their names).
func pods(ctx context.Context, g *WithT, ns, name string) func() []string {
	return func() []string {
		var list corev1.PodList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": name})).To(Succeed())
		var out []string
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				out = append(out, string(p.UID))
			}
		}
		return out
	}
}

func TestDeploymentRollsWhenItsConfigMapChanges(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, nil)
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"GREETING": "hello"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Secret(ns, "db", map[string]string{"password": "p1"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Deployment(ns, "web", 3, auto, nt.EnvFrom("ConfigMap", "app"), nt.Volume("Secret", "db")))).To(Succeed())
	g.Eventually(pods(ctx, g, ns, "web")).WithTimeout(60*time.Second).Should(HaveLen(3), "3 running pods")
	old := pods(ctx, g, ns, "web")()
	g.Eventually(func() string {
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d)).To(Succeed())
		return d.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "nudge's baseline")

	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	cm.Data["GREETING"] = "bonjour"
	g.Expect(k8s.Update(ctx, &cm)).To(Succeed())

	g.Eventually(func() []appsv1.ReplicaSet {
		var list appsv1.ReplicaSetList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}).WithTimeout(30*time.Second).Should(HaveLen(2), "a new ReplicaSet")
	g.Eventually(pods(ctx, g, ns, "web")).WithTimeout(60*time.Second).Should(
		And(HaveLen(3), Not(ContainElement(BeElementOf(old)))),
		"3 new pods, the old ones gone")
	g.Eventually(func() []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}).Should(ContainElement(And(HaveField("Reason", record.ReasonRolled), HaveField("Note", ContainSubstring("ConfigMap "+ns+"/app")))))
}

func TestStatefulSetAndDaemonSetRoll(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, nil)
	g.Expect(k8s.Create(ctx, nt.Secret(ns, "db", map[string]string{"password": "p1"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.StatefulSet(ns, "store", 2, auto, nt.Volume("Secret", "db")))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.DaemonSet(ns, "agent", auto, nt.EnvKey("Secret", "db", "password", false)))).To(Succeed())
	g.Eventually(pods(ctx, g, ns, "store")).WithTimeout(60 * time.Second).Should(HaveLen(2))
	g.Eventually(pods(ctx, g, ns, "agent")).WithTimeout(60 * time.Second).Should(HaveLen(2))
	revision := func(obj client.Object, get func() string) func() string {
		return func() string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			return get()
		}
	}
	sts := &appsv1.StatefulSet{}
	sts.Namespace, sts.Name = ns, "store"
	ds := &appsv1.DaemonSet{}
	ds.Namespace, ds.Name = ns, "agent"
	g.Eventually(revision(sts, func() string { return sts.Annotations[workload.AppliedAnnotation] })).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
	g.Eventually(revision(ds, func() string { return ds.Annotations[workload.AppliedAnnotation] })).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
	stsRev := revision(sts, func() string { return sts.Status.UpdateRevision })()
	oldPods := append(pods(ctx, g, ns, "store")(), pods(ctx, g, ns, "agent")()...)

	var s corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &s)).To(Succeed())
	s.Data["password"] = []byte("p2")
	g.Expect(k8s.Update(ctx, &s)).To(Succeed())

	g.Eventually(revision(sts, func() string { return sts.Status.UpdateRevision })).WithTimeout(30*time.Second).ShouldNot(Equal(stsRev), "a new StatefulSet revision")
	g.Eventually(revision(ds, func() string {
		if ds.Status.ObservedGeneration == ds.Generation && ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled {
			return "updated"
		}
		return ""
	})).WithTimeout(60*time.Second).Should(Equal("updated"), "the DaemonSet updated on every node")
	g.Expect(ds.Generation).To(BeNumerically(">", 1))
	g.Eventually(func() []string {
		return append(pods(ctx, g, ns, "store")(), pods(ctx, g, ns, "agent")()...)
	}).WithTimeout(90*time.Second).Should(And(HaveLen(4), Not(ContainElement(BeElementOf(oldPods)))), "every old pod replaced")
}

// kubectl rollout undo goes back to the previous ReplicaSet; nudge leaves it.
func TestRolloutUndoStays(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, nil)
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"k": "1"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, nt.Deployment(ns, "web", 2, auto, nt.EnvFrom("ConfigMap", "app")))).To(Succeed())
	get := func() *appsv1.Deployment {
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d)).To(Succeed())
		return &d
	}
	g.Eventually(func() string { return get().Annotations[workload.AppliedAnnotation] }).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	cm.Data["k"] = "2"
	g.Expect(k8s.Update(ctx, &cm)).To(Succeed())
	g.Eventually(func() string { return get().Annotations["deployment.kubernetes.io/revision"] }).WithTimeout(30 * time.Second).Should(Equal("2"))

	out, err := exec.CommandContext(ctx, filepath.Join(plane.BinDir(), "kubectl"), "--kubeconfig", plane.Kubeconfig(),
		"-n", ns, "rollout", "undo", "deployment/web").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl rollout undo: %s", out)
	g.Eventually(func() string { return get().Annotations["deployment.kubernetes.io/revision"] }).WithTimeout(30 * time.Second).Should(Equal("3"))
	g.Consistently(func() int64 { return get().Generation }).WithTimeout(4*time.Second).Should(Equal(get().Generation), "nudge not to roll again")
	g.Expect(get().Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
}

// A CronJob's job template rolls; with --cronjob-start-job a Job from the new
// template also starts at once and runs to completion.
func TestCronJobStartsAJobThatRuns(t *testing.T) {
	ctx, g, ns := namespace(t)
	nt.Start(t, plane.Config(), ns, func(o *options.Options) { o.CronJobStartJob = true })
	tmpl := nt.Template("report", nt.EnvFrom("Secret", "db"))
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report", Annotations: auto},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
	}
	g.Expect(k8s.Create(ctx, nt.Secret(ns, "db", map[string]string{"password": "p1"}))).To(Succeed())
	g.Expect(k8s.Create(ctx, cj)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cj), cj)).To(Succeed())
		return cj.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20 * time.Second).ShouldNot(BeEmpty())

	var s corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &s)).To(Succeed())
	s.Data["password"] = []byte("p2")
	g.Expect(k8s.Update(ctx, &s)).To(Succeed())

	g.Eventually(func() []batchv1.Job {
		var l batchv1.JobList
		g.Expect(k8s.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
		return l.Items
	}).WithTimeout(60*time.Second).Should(ConsistOf(And(
		HaveField("Spec.Template.Annotations", HaveKey(workload.RestartedAtAnnotation)),
		HaveField("Status.Succeeded", BeNumerically("==", 1)),
	)), "one Job from the new template, run to completion")
}
