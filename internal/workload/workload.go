// Package workload holds one adapter per workload kind: how to reach its pod
// template and how to write nudge's state and trigger to it in one patch.
package workload

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is the adapter for one workload kind.
type Kind interface {
	// Name is the kind's name as in its objects' kind field, e.g. "Deployment".
	Name() string
	// New returns an empty object of the kind.
	New() client.Object
	// NewList returns an empty list of the kind.
	NewList() client.ObjectList
	// Template returns obj's pod template, or nil when obj is not of the kind.
	Template(obj client.Object) *corev1.PodTemplateSpec
	// TemplatePath is the JSON path of the pod template in the object, e.g.
	// ["spec", "template"].
	TemplatePath() []string
}

// kind is a Kind for objects of type T.
type kind[T client.Object] struct {
	name     string
	new      func() T
	newList  func() client.ObjectList
	template func(T) *corev1.PodTemplateSpec
	path     []string
}

func (k kind[T]) Name() string               { return k.name }
func (k kind[T]) New() client.Object         { return k.new() }
func (k kind[T]) NewList() client.ObjectList { return k.newList() }
func (k kind[T]) TemplatePath() []string     { return k.path }

func (k kind[T]) Template(obj client.Object) *corev1.PodTemplateSpec {
	o, ok := obj.(T)
	if !ok {
		return nil
	}
	return k.template(o)
}

var specTemplate = []string{"spec", "template"}

// Deployment is the adapter for apps/v1 Deployments.
var Deployment Kind = kind[*appsv1.Deployment]{
	name:     "Deployment",
	new:      func() *appsv1.Deployment { return &appsv1.Deployment{} },
	newList:  func() client.ObjectList { return &appsv1.DeploymentList{} },
	template: func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// StatefulSet is the adapter for apps/v1 StatefulSets.
var StatefulSet Kind = kind[*appsv1.StatefulSet]{
	name:     "StatefulSet",
	new:      func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
	newList:  func() client.ObjectList { return &appsv1.StatefulSetList{} },
	template: func(o *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// DaemonSet is the adapter for apps/v1 DaemonSets.
var DaemonSet Kind = kind[*appsv1.DaemonSet]{
	name:     "DaemonSet",
	new:      func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
	newList:  func() client.ObjectList { return &appsv1.DaemonSetList{} },
	template: func(o *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// All returns every built-in kind, in a fixed order.
func All() []Kind { return []Kind{Deployment, StatefulSet, DaemonSet} }

// Patch returns a JSON merge patch (RFC 7386) that sets labels and
// annotations on the object's metadata and, when template is not empty, the
// pod template's annotations, guarded by resourceVersion so that a write
// based on a stale read fails with a conflict instead of overwriting a newer
// object.
func Patch(k Kind, resourceVersion string, labels, annotations, template map[string]string) ([]byte, error) {
	doc := map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion, "labels": labels, "annotations": annotations},
	}
	if len(template) > 0 {
		var node any = map[string]any{"metadata": map[string]any{"annotations": template}}
		path := k.TemplatePath()
		for i := len(path) - 1; i >= 0; i-- {
			node = map[string]any{path[i]: node}
		}
		for key, v := range node.(map[string]any) {
			doc[key] = v
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding patch for %s: %w", k.Name(), err)
	}
	return b, nil
}
