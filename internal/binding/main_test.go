package binding_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// harborCRD is the test's Harbor CRD; see its header for the source.
//
//go:embed testdata/harbor-crd.yaml
var harborCRD []byte

// suite is the kube-apiserver every test here talks to, and its client;
// the tests install nudge's ValueBinding CRD (as the chart ships it) and the
// Harbor CRD on it (installCRDs).
var suite nudgetest.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// installCRDs installs the ValueBinding and Harbor CRDs once per test (an
// existing one is kept).
func installCRDs(t *testing.T) {
	t.Helper()
	for _, b := range [][]byte{valueBindingCRD(t), harborCRD} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatal(err)
		}
		nudgetest.InstallCRD(t, suite.K8s, crd)
	}
}

// valueBindingCRD returns the ValueBinding CRD as the chart ships it.
func valueBindingCRD(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "nudge", "crds", "nudge.dev_valuebindings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// env is one test's namespace and its nudge.
type env struct {
	t     *testing.T
	g     *WithT
	ctx   context.Context
	ns    string
	nudge *nudgetest.Nudge
}

// harborKind is the --value-binding-targets entry of Harbor.
const harborKind = "Harbor.goharbor.io"

// setup creates a namespace for t and, when start, a nudge watching it with
// value bindings on and Harbor allowed, changed by mutate.
func setup(t *testing.T, start bool, mutate func(*options.Options)) *env {
	t.Helper()
	t.Parallel()
	installCRDs(t)
	e := &env{t: t, g: NewWithT(t), ctx: t.Context()}
	ns, err := suite.Plane.GenerateNamespace(e.ctx, "vb-")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.ns = ns
	if start {
		e.nudge = e.start(mutate)
	}
	return e
}

func (e *env) start(mutate func(*options.Options)) *nudgetest.Nudge {
	return nudgetest.Start(e.t, suite.Plane.Config(), e.ns, func(o *options.Options) {
		o.ValueBindings = true
		o.ValueBindingTargets = []string{harborKind}
		if mutate != nil {
			mutate(o)
		}
	})
}

func (e *env) create(objs ...client.Object) {
	e.t.Helper()
	for _, o := range objs {
		e.g.Expect(suite.K8s.Create(e.ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
}

// harbor returns a Harbor as argocd-controller would apply it: S3 storage
// with bucket, region and the Secret of the secret key, no access key.
func harbor(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"externalURL":            "https://harbor.example.com",
			"harborAdminPasswordRef": "admin",
			"version":                "2.13.0",
			"imageChartStorage": map[string]any{"s3": map[string]any{
				"bucket": "images", "region": "eu-west-1", "secretkeyRef": "s3-credentials",
			}},
		},
	}}
	return u
}

// argoApply applies obj under the field manager argocd-controller, forced.
func (e *env) argoApply(obj *unstructured.Unstructured) {
	e.t.Helper()
	e.g.Expect(suite.K8s.Apply(e.ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.FieldOwner("argocd-controller"), client.ForceOwnership)).To(Succeed())
}

// getHarbor reads a Harbor of the test's namespace.
func (e *env) getHarbor(name string) *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("goharbor.io/v1beta1")
	u.SetKind("Harbor")
	e.g.Expect(suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, u)).To(Succeed())
	return u
}

// field returns the Harbor's field at the dotted path, "" when absent.
func (e *env) field(name string, path ...string) func() any {
	return func() any {
		v, _, _ := unstructured.NestedFieldNoCopy(e.getHarbor(name).Object, path...)
		return v
	}
}

var accessKey = []string{"spec", "imageChartStorage", "s3", "accesskey"}

// valueBinding returns a binding of the Harbor name's fields to keys.
func valueBinding(namespace, name, target string, values ...v1alpha1.BoundValue) *v1alpha1.ValueBinding {
	return &v1alpha1.ValueBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ValueBindingSpec{
			Target: v1alpha1.TargetReference{APIVersion: "goharbor.io/v1beta1", Kind: "Harbor", Name: target},
			Values: values,
		},
	}
}

func fromSecret(fieldPath, secret, key string) v1alpha1.BoundValue {
	return v1alpha1.BoundValue{FieldPath: fieldPath, ValueFrom: v1alpha1.ValueSource{
		SecretKeyRef: &v1alpha1.KeySelector{Name: secret, Key: key}}}
}

func fromConfigMap(fieldPath, cm, key string) v1alpha1.BoundValue {
	return v1alpha1.BoundValue{FieldPath: fieldPath, ValueFrom: v1alpha1.ValueSource{
		ConfigMapKeyRef: &v1alpha1.KeySelector{Name: cm, Key: key}}}
}

func optional(v v1alpha1.BoundValue) v1alpha1.BoundValue {
	if v.ValueFrom.SecretKeyRef != nil {
		v.ValueFrom.SecretKeyRef.Optional = ptr.To(true)
	} else {
		v.ValueFrom.ConfigMapKeyRef.Optional = ptr.To(true)
	}
	return v
}

// ready returns the binding's Ready condition once it is for the binding's
// generation, nil before.
func (e *env) ready(name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		var b v1alpha1.ValueBinding
		if err := suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &b); err != nil {
			return nil
		}
		c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != b.Generation || b.Status.ObservedGeneration != b.Generation {
			return nil
		}
		return c
	}
}

// waitReason waits until the binding's Ready condition has reason and
// returns it.
func (e *env) waitReason(name, reason string) *metav1.Condition {
	e.t.Helper()
	var c *metav1.Condition
	e.g.Eventually(func() string {
		c = e.ready(name)()
		if c == nil {
			return ""
		}
		return c.Reason
	}).WithTimeout(30*time.Second).Should(Equal(reason), "ValueBinding %s to be Ready with reason %s", name, reason)
	return c
}

func (e *env) updateSecret(name string, data map[string]string) {
	e.t.Helper()
	var s corev1.Secret
	e.g.Expect(suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &s)).To(Succeed())
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	e.g.Expect(suite.K8s.Update(e.ctx, &s)).To(Succeed())
}

// events returns the Events of the namespace with reason.
func (e *env) events(reason string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		e.g.Expect(suite.K8s.List(e.ctx, &list, client.InNamespace(e.ns))).To(Succeed())
		var out []eventsv1.Event
		for _, ev := range list.Items {
			if ev.Reason == reason {
				out = append(out, ev)
			}
		}
		return out
	}
}

// managers returns the field managers of the Harbor that own the field at
// path (dotted), read from its managedFields.
func (e *env) managers(name string, path ...string) []string {
	e.t.Helper()
	var out []string
	for _, m := range e.getHarbor(name).GetManagedFields() {
		var fields map[string]any
		e.g.Expect(json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		cur := fields
		found := true
		for _, p := range path {
			next, ok := cur["f:"+p].(map[string]any)
			if !ok {
				found = false
				break
			}
			cur = next
		}
		if found {
			out = append(out, m.Manager)
		}
	}
	return out
}
