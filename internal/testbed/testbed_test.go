package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// revisionAnnotation is the pod-template annotation the tests change to
// make a workload roll.
const revisionAnnotation = "testbed.nudge.dev/revision"

func TestAPIServerModeServesAdminAndUserIdentities(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	p := ForTest(t, Options{Mode: APIServer, AuditLog: true})

	admin, err := kubernetes.NewForConfig(p.Config())
	g.Expect(err).NotTo(HaveOccurred())
	ns, err := p.GenerateNamespace(ctx, "apiserver-")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "admin creates a ConfigMap")
	_, err = admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "CreateNamespace made the default ServiceAccount")

	cfg, err := p.UserConfig("alice", "testers")
	g.Expect(err).NotTo(HaveOccurred())
	alice, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = alice.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "alice, without RBAC, is refused: got %v", err)
	g.Expect(err).To(MatchError(ContainSubstring(`User "alice"`)), "the apiserver knows alice by her certificate")

	// Once RBAC grants it, alice reads the ConfigMap.
	// (A Role of its own: the aggregated ClusterRoles view, edit and admin
	// are empty in apiserver mode, where no controller aggregates them.)
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		_, err := alice.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		return err
	}).WithTimeout(10*time.Second).Should(Succeed(), "alice reads the ConfigMap once RBAC lets her")

	events := readAudit(t, p.AuditLogPath())
	g.Expect(events).To(ContainElement(auditEvent{
		Verb: "get", User: "alice", Resource: "configmaps", Namespace: ns, Name: "settings", Code: 403,
	}), "the audit log records alice's refused get")

	stopAndExpectNoProcess(t, p)
}

func TestClusterRollover(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	begin := time.Now()
	p := ForTest(t, Options{Mode: Cluster, Nodes: 2})
	t.Logf("Measured: cluster mode up in %v", time.Since(begin).Round(time.Millisecond))

	cs, err := kubernetes.NewForConfig(p.Config())
	g.Expect(err).NotTo(HaveOccurred())
	ns, err := p.GenerateNamespace(ctx, "rollover-")
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("Deployment", func(t *testing.T) {
		g := NewWithT(t)
		labels := map[string]string{"app": "web"}
		_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels, "1"),
			},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		expectPodsAtRevision(ctx, g, cs, ns, labels, "1", 3, 30*time.Second)

		start := time.Now()
		patchRevision(ctx, g, cs, "deployments", ns, "web", "2")
		g.Eventually(func(g Gomega) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), "observed generation")
			g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(3), "updated replicas")
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(3), "available replicas")
			g.Expect(d.Status.Replicas).To(BeEquivalentTo(3), "replicas (old ones scaled away)")
			checkPodsAtRevision(ctx, g, cs, ns, labels, "2", 3)
		}).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(Succeed(),
			"the Deployment's new ReplicaSet is fully available and its old pods are gone")
		t.Logf("Measured: 3-replica Deployment rollover (new ReplicaSet available, old pods gone) in %v",
			time.Since(start).Round(time.Millisecond))

		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rss.Items).To(HaveLen(2), "one ReplicaSet per revision")
	})

	t.Run("StatefulSet", func(t *testing.T) {
		g := NewWithT(t)
		labels := map[string]string{"app": "db"}
		_, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels, "1"),
			},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		expectPodsAtRevision(ctx, g, cs, ns, labels, "1", 2, 30*time.Second)

		patchRevision(ctx, g, cs, "statefulsets", ns, "db", "2")
		g.Eventually(func(g Gomega) {
			s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation), "observed generation")
			g.Expect(s.Status.CurrentRevision).To(Equal(s.Status.UpdateRevision), "current revision")
			g.Expect(s.Status.UpdatedReplicas).To(BeEquivalentTo(2), "updated replicas")
			g.Expect(s.Status.ReadyReplicas).To(BeEquivalentTo(2), "ready replicas")
			checkPodsAtRevision(ctx, g, cs, ns, labels, "2", 2)
		}).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(),
			"the StatefulSet's pods are all at the new revision and Ready")
	})

	t.Run("DaemonSet", func(t *testing.T) {
		g := NewWithT(t)
		labels := map[string]string{"app": "agent"}
		_, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels, "1"),
			},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		expectPodsAtRevision(ctx, g, cs, ns, labels, "1", 2, 30*time.Second)

		patchRevision(ctx, g, cs, "daemonsets", ns, "agent", "2")
		g.Eventually(func(g Gomega) {
			d, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), "observed generation")
			g.Expect(d.Status.DesiredNumberScheduled).To(BeEquivalentTo(2), "desired: one pod per kwok node")
			g.Expect(d.Status.UpdatedNumberScheduled).To(BeEquivalentTo(2), "updated pods")
			g.Expect(d.Status.NumberAvailable).To(BeEquivalentTo(2), "available pods")
			checkPodsAtRevision(ctx, g, cs, ns, labels, "2", 2)
		}).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(),
			"the DaemonSet's pods are all at the new revision and available")

		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(ConsistOf(onNode(nodeName(0)), onNode(nodeName(1))), "one pod on each kwok node")
	})

	stopAndExpectNoProcess(t, p)
}

func TestStartFailsClearlyWithoutBinaries(t *testing.T) {
	g := NewWithT(t)
	_, err := Start(t.Context(), Options{BinDir: t.TempDir(), Logf: t.Logf})
	g.Expect(err).To(MatchError(ErrMissingBinary))
	g.Expect(err).To(MatchError(ContainSubstring("make kube-bins")))
}

// podTemplate returns a pod template with labels and the revision
// annotation. kwok runs no container, so the image is never pulled.
func podTemplate(labels map[string]string, revision string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      labels,
			Annotations: map[string]string{revisionAnnotation: revision},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
		},
	}
}

// patchRevision sets the revision annotation of the pod template of the
// apps/v1 resource ns/name.
func patchRevision(ctx context.Context, g Gomega, cs kubernetes.Interface, resource, ns, name, revision string) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{revisionAnnotation: revision}},
	}}})
	g.Expect(err).NotTo(HaveOccurred())
	err = cs.AppsV1().RESTClient().Patch(types.MergePatchType).
		Namespace(ns).Resource(resource).Name(name).Body(patch).Do(ctx).Error()
	g.Expect(err).NotTo(HaveOccurred(), "patching %s %s/%s", resource, ns, name)
}

// expectPodsAtRevision waits until exactly want pods match labels, every one
// Ready and at revision.
func expectPodsAtRevision(ctx context.Context, g Gomega, cs kubernetes.Interface, ns string, labels map[string]string, revision string, want int, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		checkPodsAtRevision(ctx, g, cs, ns, labels, revision, want)
	}).WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(Succeed(),
		"%d Ready pods %v at revision %s, and no other", want, labels, revision)
}

// checkPodsAtRevision asserts that exactly want pods match labels, every one
// Ready and at revision: the old pods are gone from the API, not just going.
func checkPodsAtRevision(ctx context.Context, g Gomega, cs kubernetes.Interface, ns string, labels map[string]string, revision string, want int) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels}),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(HaveLen(want), "pods %v", labels)
	for _, pod := range pods.Items {
		g.Expect(pod.Annotations).To(HaveKeyWithValue(revisionAnnotation, revision), "revision of pod %s", pod.Name)
		g.Expect(pod.DeletionTimestamp).To(BeNil(), "pod %s is not being deleted", pod.Name)
		g.Expect(podReady(&pod)).To(BeTrue(), "pod %s is Ready", pod.Name)
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func onNode(node string) OmegaMatcher {
	return WithTransform(func(pod corev1.Pod) string { return pod.Spec.NodeName }, Equal(node))
}

// auditEvent is what the tests read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb, User, Resource, Namespace, Name string
	Code                                  int
}

// readAudit returns the events of the audit log at path.
func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	var events []auditEvent
	_, err := ReadAuditLog(path, 0, "", func(e AuditEvent) {
		ev := auditEvent{Verb: e.Verb, User: e.User.Username, Resource: e.Resource(), Code: e.Code()}
		if e.ObjectRef != nil {
			ev.Namespace, ev.Name = e.ObjectRef.Namespace, e.ObjectRef.Name
		}
		events = append(events, ev)
	})
	if err != nil {
		t.Fatalf("Reading audit log: %v", err)
	}
	return events
}

// stopAndExpectNoProcess stops p and asserts that every process it started
// is gone: reaped, so not even a zombie is left.
func stopAndExpectNoProcess(t *testing.T, p *Plane) {
	t.Helper()
	pids := p.pids()
	if len(pids) == 0 {
		t.Fatal("The plane reports no process")
	}
	start := time.Now()
	if err := p.Stop(t.Failed()); err != nil {
		t.Fatalf("Stopping the plane: %v", err)
	}
	t.Logf("Measured: %s plane stopped in %v", p.Mode(), time.Since(start).Round(time.Millisecond))
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("Process %d of the plane is still there after Stop", pid)
		}
	}
	if !t.Failed() {
		if _, err := os.Stat(p.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("State directory %s is still there after Stop (stat: %v)", p.Dir(), err)
		}
	}
}
