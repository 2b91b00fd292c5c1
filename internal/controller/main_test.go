package controller_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
)

// plane is the kube-apiserver every test here talks to; no workload
// controller runs, so the pod-template writes to a Deployment are nudge's
// rollouts (and the test's own rewrites).
var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) {
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane) {
		plane = p
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = apiextensionsv1.AddToScheme(scheme)
		c, err := client.NewWithWatch(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}

// env is one test's namespace and its nudge.
type env struct {
	t         *testing.T
	g         *WithT
	ctx       context.Context
	ns        string
	nudge     *nudgetest.Nudge
	templates *templateWrites
}

// setup creates a namespace for t and starts a nudge watching it, unless
// mutate is nil and start is false.
func setup(t *testing.T, start bool, mutate func(*options.Options)) *env {
	t.Helper()
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ctx: t.Context()}
	ns, err := plane.GenerateNamespace(e.ctx, "it-")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.ns = ns
	e.templates = watchTemplates(t, ns)
	if start {
		e.nudge = nudgetest.Start(t, plane.Config(), ns, mutate)
	}
	return e
}

func (e *env) create(objs ...client.Object) {
	e.t.Helper()
	for _, o := range objs {
		e.g.Expect(k8s.Create(e.ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
}

// deployment reads a Deployment of the test's namespace.
func (e *env) deployment(name string) *appsv1.Deployment {
	e.t.Helper()
	var d appsv1.Deployment
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &d)).To(Succeed())
	return &d
}

// annotate merges annotations, a JSON object whose null values remove a key,
// into the Deployment's metadata.
func (e *env) annotate(name, annotations string) {
	e.t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":`+annotations+`}}`))
	e.g.Expect(k8s.Patch(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}, patch)).To(Succeed())
}

// rollouts returns how many times the Deployment's pod template changed
// since its creation.
func (e *env) rollouts(name string) func() int64 {
	return func() int64 { return e.templates.count(name) }
}

// templateWrites counts, from a watch, the changes of each Deployment's pod
// template in one namespace. A Deployment's generation cannot: it also grows
// when its annotations change.
type templateWrites struct {
	mu     sync.Mutex
	last   map[string]corev1.PodTemplateSpec
	counts map[string]int64
}

func watchTemplates(t *testing.T, ns string) *templateWrites {
	t.Helper()
	w, err := k8s.Watch(t.Context(), &appsv1.DeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watching Deployments: %v", err)
	}
	tw := &templateWrites{last: map[string]corev1.PodTemplateSpec{}, counts: map[string]int64{}}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			tw.mu.Lock()
			if prev, seen := tw.last[d.Name]; seen && !equality.Semantic.DeepEqual(prev, d.Spec.Template) {
				tw.counts[d.Name]++
			}
			tw.last[d.Name] = d.Spec.Template
			tw.mu.Unlock()
		}
	}()
	return tw
}

func (tw *templateWrites) count(name string) int64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.counts[name]
}

// baselined waits until nudge has recorded the Deployment's applied state.
func (e *env) baselined(name string) {
	e.t.Helper()
	e.g.Eventually(func() string {
		return e.deployment(name).Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of Deployment %s", name)
}

// rolledTo waits until the Deployment has had n rollouts, then checks for 3 s
// that no further one follows.
func (e *env) rolledTo(name string, n int64) {
	e.t.Helper()
	e.g.Eventually(e.rollouts(name)).WithTimeout(20*time.Second).Should(BeNumerically(">=", n),
		"Deployment %s to be rolled %d time(s)", name, n)
	e.g.Consistently(e.rollouts(name)).WithTimeout(3*time.Second).Should(Equal(n),
		"Deployment %s to stay at %d rollout(s)", name, n)
}

func (e *env) updateConfigMap(name string, mutate func(*corev1.ConfigMap)) {
	e.t.Helper()
	var cm corev1.ConfigMap
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &cm)).To(Succeed())
	mutate(&cm)
	e.g.Expect(k8s.Update(e.ctx, &cm)).To(Succeed())
}

func (e *env) updateSecret(name string, mutate func(*corev1.Secret)) {
	e.t.Helper()
	var s corev1.Secret
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &s)).To(Succeed())
	mutate(&s)
	e.g.Expect(k8s.Update(e.ctx, &s)).To(Succeed())
}

// events returns the Events of the namespace about object name with reason.
func (e *env) events(name, reason string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		e.g.Expect(k8s.List(e.ctx, &list, client.InNamespace(e.ns))).To(Succeed())
		var out []eventsv1.Event
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason {
				out = append(out, ev)
			}
		}
		return out
	}
}
