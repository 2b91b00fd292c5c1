package nudgetest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/workload"
)

// Client returns a client of cfg that knows the built-in kinds, CRDs and
// nudge's own ValueBinding.
func Client(cfg *rest.Config) (client.WithWatch, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// Env is one integration test's namespace, with the nudge that watches it:
// the test's Gomega, context and client, and what it reads back.
type Env struct {
	T     *testing.T
	G     *gomega.WithT
	Ctx   context.Context
	NS    string
	Nudge *Nudge
	// K8s is the test's client of the plane.
	K8s client.WithWatch
	// Templates counts, from a watch, the pod-template changes of the
	// namespace's Deployments.
	Templates *TemplateWrites
}

// Create creates objs, failing the test on an error.
func (e *Env) Create(objs ...client.Object) {
	e.T.Helper()
	for _, o := range objs {
		e.G.Expect(e.K8s.Create(e.Ctx, o)).To(gomega.Succeed(), "creating %T %s", o, o.GetName())
	}
}

// Deployment reads a Deployment of the test's namespace.
func (e *Env) Deployment(name string) *appsv1.Deployment {
	e.T.Helper()
	var d appsv1.Deployment
	e.G.Expect(e.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: name}, &d)).To(gomega.Succeed())
	return &d
}

// Annotate merges annotations, a JSON object whose null values remove a
// key, into the Deployment's metadata.
func (e *Env) Annotate(name, annotations string) {
	e.T.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":`+annotations+`}}`))
	e.G.Expect(e.K8s.Patch(e.Ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name}}, patch)).To(gomega.Succeed())
}

// Rollouts returns how many times the Deployment's pod template changed
// since its creation.
func (e *Env) Rollouts(name string) func() int64 {
	return func() int64 { return e.Templates.Count(name) }
}

// Baselined waits until nudge has recorded the Deployment's applied state.
func (e *Env) Baselined(name string) {
	e.T.Helper()
	e.G.Eventually(func() string {
		return e.Deployment(name).Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(gomega.BeEmpty(), "nudge to record the baseline of Deployment %s", name)
}

// BaselinedObj waits until nudge has recorded obj's applied state, read
// into obj.
func (e *Env) BaselinedObj(obj client.Object) {
	e.T.Helper()
	e.G.Eventually(func() string {
		e.G.Expect(e.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
		return obj.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(gomega.BeEmpty(), "nudge to record the baseline of %s", obj.GetName())
}

// Generation returns a function reading obj's generation: for every kind
// but Deployment it counts spec writes (a Deployment's also counts
// annotation writes).
func (e *Env) Generation(obj client.Object) func() int64 {
	return func() int64 {
		e.G.Expect(e.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed())
		return obj.GetGeneration()
	}
}

// RolledTo waits until the Deployment has had n rollouts, then checks for
// 3 s that no further one follows.
func (e *Env) RolledTo(name string, n int64) {
	e.T.Helper()
	e.G.Eventually(e.Rollouts(name)).WithTimeout(20*time.Second).Should(gomega.BeNumerically(">=", n),
		"Deployment %s to be rolled %d time(s)", name, n)
	e.G.Consistently(e.Rollouts(name)).WithTimeout(3*time.Second).Should(gomega.Equal(n),
		"Deployment %s to stay at %d rollout(s)", name, n)
}

// UpdateConfigMap reads a ConfigMap of the namespace, mutates and updates it.
func (e *Env) UpdateConfigMap(name string, mutate func(*corev1.ConfigMap)) {
	e.T.Helper()
	var cm corev1.ConfigMap
	e.G.Expect(e.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: name}, &cm)).To(gomega.Succeed())
	mutate(&cm)
	e.G.Expect(e.K8s.Update(e.Ctx, &cm)).To(gomega.Succeed())
}

// UpdateSecret reads a Secret of the namespace, mutates and updates it.
func (e *Env) UpdateSecret(name string, mutate func(*corev1.Secret)) {
	e.T.Helper()
	var s corev1.Secret
	e.G.Expect(e.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: name}, &s)).To(gomega.Succeed())
	mutate(&s)
	e.G.Expect(e.K8s.Update(e.Ctx, &s)).To(gomega.Succeed())
}

// Events returns the Events of the namespace about object name with reason.
func (e *Env) Events(name, reason string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		e.G.Expect(e.K8s.List(e.Ctx, &list, client.InNamespace(e.NS))).To(gomega.Succeed())
		var out []eventsv1.Event
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason {
				out = append(out, ev)
			}
		}
		return out
	}
}

// Refuse makes the API server refuse, in the test's namespace only, the
// operations of rule on objects for which expression (CEL) is false, with
// message, by a ValidatingAdmissionPolicy named name; it returns once probe,
// a dry-run write, fails with message. The func it returns lifts the
// refusal and returns once probe succeeds again; the policy is removed at
// the test's end in any case.
func (e *Env) Refuse(name string, rule admissionregistrationv1.RuleWithOperations, expression, message string, probe func() error) (allow func()) {
	e.T.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: rule,
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.NS},
			}},
		},
	}
	e.G.Expect(e.K8s.Create(e.Ctx, policy)).To(gomega.Succeed())
	e.G.Expect(e.K8s.Create(e.Ctx, binding)).To(gomega.Succeed())
	remove := func() {
		for _, o := range []client.Object{binding, policy} {
			// Not e.Ctx: it ends before the test's cleanup runs.
			if err := e.K8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				e.T.Errorf("Deleting %s: %v", o.GetName(), err)
			}
		}
	}
	e.T.Cleanup(remove)
	e.G.Eventually(probe).WithTimeout(20*time.Second).Should(gomega.MatchError(gomega.ContainSubstring(message)),
		"the API server to enforce the policy %s", name)
	return func() {
		e.T.Helper()
		remove()
		e.G.Eventually(probe).WithTimeout(20*time.Second).Should(gomega.Succeed(), "the API server to accept again what %s refused", name)
	}
}

// TemplateWrites counts, from a watch, the changes of each workload's pod
// template of one kind in one namespace. A Deployment's generation cannot:
// it also grows when its annotations change.
type TemplateWrites struct {
	mu     sync.Mutex
	last   map[string]corev1.PodTemplateSpec
	counts map[string]int64
}

// WatchTemplates starts counting the pod-template changes of the
// Deployments of ns, until t ends.
func WatchTemplates(t *testing.T, k8s client.WithWatch, ns string) *TemplateWrites {
	t.Helper()
	return WatchTemplatesOf(t, k8s, ns, &appsv1.DeploymentList{})
}

// WatchTemplatesOf starts counting the pod-template changes of the
// workloads of list's kind in ns (a DeploymentList, StatefulSetList or
// DaemonSetList), until t ends.
func WatchTemplatesOf(t *testing.T, k8s client.WithWatch, ns string, list client.ObjectList) *TemplateWrites {
	t.Helper()
	events := Watch(t, k8s, list, client.InNamespace(ns))
	tw := &TemplateWrites{last: map[string]corev1.PodTemplateSpec{}, counts: map[string]int64{}}
	go func() {
		for ev := range events {
			var name string
			var tmpl corev1.PodTemplateSpec
			switch o := ev.Object.(type) {
			case *appsv1.Deployment:
				name, tmpl = o.Name, o.Spec.Template
			case *appsv1.StatefulSet:
				name, tmpl = o.Name, o.Spec.Template
			case *appsv1.DaemonSet:
				name, tmpl = o.Name, o.Spec.Template
			default:
				continue
			}
			tw.mu.Lock()
			if prev, seen := tw.last[name]; seen && !equality.Semantic.DeepEqual(prev, tmpl) {
				tw.counts[name]++
			}
			tw.last[name] = tmpl
			tw.mu.Unlock()
		}
	}()
	return tw
}

// Count returns how many times the pod template of workload name changed.
func (tw *TemplateWrites) Count(name string) int64 {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.counts[name]
}

// Hook is a local webhook endpoint, on 127.0.0.1, that keeps every body it
// receives.
type Hook struct {
	// URL is the endpoint's address, a path like Slack's.
	URL string

	mu     sync.Mutex
	bodies []string
}

// NewHook starts a Hook, stopped when t ends.
func NewHook(t *testing.T) *Hook {
	h := &Hook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hooks/T000/B000/XXXX"
	return h
}

// Received returns the bodies received so far, in order.
func (h *Hook) Received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}
