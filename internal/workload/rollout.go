package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RolloutGVK is Argo Rollouts' Rollout
// (https://argo-rollouts.readthedocs.io/en/stable/features/specification/).
var RolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// Rollout is the adapter for Argo Rollouts, read as unstructured objects so
// that nudge does not depend on Argo's Go module. A Rollout that uses
// spec.workloadRef instead of a template has no pod template of its own
// (Template returns nil): it is a Referrer, whose template TemplateOf reads
// from the Deployment it names
// (https://argo-rollouts.readthedocs.io/en/stable/features/workload-referencing/).
var Rollout Kind = &unstructuredKind{gvk: RolloutGVK, plural: "rollouts", path: specTemplate, trigger: triggerOf(specTemplate),
	ref: []string{"spec", "workloadRef"}}

// unstructuredKind is the adapter for a kind nudge has no Go type for: Argo
// Rollouts and the configured custom kinds. Without a template path the kind
// has no pod template: Template returns an empty one, so only sources named
// by annotations count, and the trigger goes to the trigger path alone.
type unstructuredKind struct {
	gvk     schema.GroupVersionKind
	plural  string
	path    []string
	trigger []string
	// annotation is the TriggerAnnotation.
	annotation string
	// ref is the path of a workload reference (see Referrer); nil for none.
	ref []string
}

func (k unstructuredKind) Name() string              { return k.gvk.Kind }
func (k unstructuredKind) Plural() string            { return k.plural }
func (k unstructuredKind) TemplatePath() []string    { return k.path }
func (k unstructuredKind) TriggerPath() []string     { return k.trigger }
func (k unstructuredKind) TriggerAnnotation() string { return k.annotation }

func (k unstructuredKind) New() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	return u
}

func (k unstructuredKind) NewList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	return l
}

// Template returns a copy of the pod template, or nil when obj is not of
// the kind, has none at the template path, or it does not decode. Fields a
// pod template does not have (Knative's containerConcurrency, say) are
// dropped from the copy. A kind without a template path has an empty one.
func (k unstructuredKind) Template(obj client.Object) *corev1.PodTemplateSpec {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != k.gvk {
		return nil
	}
	if len(k.path) == 0 {
		return &corev1.PodTemplateSpec{}
	}
	m, found, err := unstructured.NestedMap(u.Object, k.path...)
	if !found || err != nil {
		return nil
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return nil
	}
	return Unpacked(&t)
}

// String returns the kind's group, version and kind.
func (k unstructuredKind) String() string { return fmt.Sprint(k.gvk) }
