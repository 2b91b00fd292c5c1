package workload

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ref is the workload an object takes its pod template from instead of
// holding one: an Argo Rollout's spec.workloadRef
// (https://argo-rollouts.readthedocs.io/en/stable/features/workload-referencing/),
// always in the referrer's namespace.
type Ref struct {
	// APIVersion and Kind are the referenced workload's, e.g. "apps/v1"
	// and "Deployment".
	APIVersion, Kind string
	// Namespace is the referrer's; Name the referenced workload's.
	Namespace, Name string
}

// Key returns the referenced workload's namespace and name.
func (r Ref) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// String names the referenced workload: "Deployment shop/web".
func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Referrer is implemented by a Kind whose objects may take their pod
// template from another workload (Argo Rollouts' spec.workloadRef). Such an
// object is rolled by a trigger of its own (spec.restartAt for a Rollout),
// never by a write to the workload it refers to.
type Referrer interface {
	// RefOf returns the workload obj takes its pod template from; ok is
	// false when obj is not of the kind or refers to none.
	RefOf(obj client.Object) (ref Ref, ok bool)
	// RefPath is the JSON path of the reference in the object, e.g.
	// ["spec", "workloadRef"]: nudge's cache keeps it.
	RefPath() []string
}

// RefOf returns the workload obj, of kind k, takes its pod template from;
// ok is false when k is no Referrer or obj refers to none.
func RefOf(k Kind, obj client.Object) (Ref, bool) {
	if r, ok := k.(Referrer); ok {
		return r.RefOf(obj)
	}
	return Ref{}, false
}

// IsReferrer reports whether objects of kind k may take their pod template
// from another workload: a Referrer with a ref path (Argo Rollouts; no
// custom kind).
func IsReferrer(k Kind) bool {
	r, ok := k.(Referrer)
	return ok && len(r.RefPath()) > 0
}

// Refers reports whether obj, of kind k, takes its pod template from
// another workload (see RefOf).
func Refers(k Kind, obj client.Object) bool {
	_, ok := RefOf(k, obj)
	return ok
}

// ErrRefKind is returned by TemplateOf for a reference to a kind nudge does
// not read pod templates from: it reads those of apps/v1 Deployments (Argo
// Rollouts also takes ReplicaSets and PodTemplates).
var ErrRefKind = errors.New("nudge reads the pod template of an apps/v1 Deployment only")

// TemplateOf returns the pod template of obj, of kind k: k.Template(obj),
// or, when obj takes its template from a Deployment (see Referrer), that
// Deployment's pod template, read with reader (unpacked when read from
// nudge's cache, see Unpacked). It returns nil, and no error, when obj has
// no pod template. For a reference it returns an error naming it that
// wraps reader's (NotFound for a Deployment that does not exist) or
// ErrRefKind.
func TemplateOf(ctx context.Context, reader client.Reader, k Kind, obj client.Object) (*corev1.PodTemplateSpec, error) {
	ref, ok := RefOf(k, obj)
	if !ok {
		return k.Template(obj), nil
	}
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" {
		return nil, fmt.Errorf("spec.workloadRef names %s %s: %w", ref.APIVersion, ref.String(), ErrRefKind)
	}
	dep := &appsv1.Deployment{}
	if err := reader.Get(ctx, ref.Key(), dep); err != nil {
		return nil, fmt.Errorf("reading the pod template of %s (spec.workloadRef): %w", ref, err)
	}
	return Deployment.Template(dep), nil
}

// RefOf reads obj's reference at the kind's ref path; ok is false for an
// object of another kind, a kind without a ref path (every custom kind), or
// no reference with a name there.
func (k unstructuredKind) RefOf(obj client.Object) (Ref, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || len(k.ref) == 0 || u.GroupVersionKind() != k.gvk {
		return Ref{}, false
	}
	m, found, err := unstructured.NestedMap(u.Object, k.ref...)
	if !found || err != nil {
		return Ref{}, false
	}
	field := func(name string) string {
		s, _ := m[name].(string)
		return s
	}
	ref := Ref{APIVersion: field("apiVersion"), Kind: field("kind"), Namespace: u.GetNamespace(), Name: field("name")}
	return ref, ref.Name != ""
}

// RefPath returns the path of the kind's workload reference; nil for a
// kind without one (every custom kind).
func (k unstructuredKind) RefPath() []string { return k.ref }
