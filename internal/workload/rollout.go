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
// spec.workloadRef instead of a template has no pod template (Template
// returns nil) and is left alone.
var Rollout Kind = &unstructuredKind{gvk: RolloutGVK, plural: "rollouts", path: specTemplate}

type unstructuredKind struct {
	gvk    schema.GroupVersionKind
	plural string
	path   []string
}

func (k unstructuredKind) Name() string           { return k.gvk.Kind }
func (k unstructuredKind) Plural() string         { return k.plural }
func (k unstructuredKind) TemplatePath() []string { return k.path }

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
// the kind, has none, or it does not decode.
func (k unstructuredKind) Template(obj client.Object) *corev1.PodTemplateSpec {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != k.gvk {
		return nil
	}
	m, found, err := unstructured.NestedMap(u.Object, k.path...)
	if !found || err != nil {
		return nil
	}
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return nil
	}
	return &t
}

// String returns the kind's group, version and kind.
func (k unstructuredKind) String() string { return fmt.Sprint(k.gvk) }
