package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
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
	// Of an object of nudge's cache, whose spec is packed (see
	// CachedSpecMark), it is a copy with the spec unpacked.
	Template(obj client.Object) *corev1.PodTemplateSpec
	// TemplatePath is the JSON path of the pod template in the object, e.g.
	// ["spec", "template"]; empty for a custom kind without one.
	TemplatePath() []string
	// TriggerPath is the JSON path of the annotations map nudge writes its
	// trigger into, e.g. ["spec", "template", "metadata", "annotations"].
	TriggerPath() []string
	// TriggerAnnotation is an annotation nudge sets to the rollout time
	// besides its own trigger (e.g. Flux's reconcile.fluxcd.io/requestedAt);
	// "" for none.
	TriggerAnnotation() string
	// Plural is the kind's lower-case plural resource name, e.g.
	// "deployments", as --ignored-workload-types names it.
	Plural() string
}

// kind is a Kind for objects of type T.
type kind[T client.Object] struct {
	name     string
	plural   string
	new      func() T
	newList  func() client.ObjectList
	template func(T) *corev1.PodTemplateSpec
	path     []string
}

func (k kind[T]) Name() string               { return k.name }
func (k kind[T]) Plural() string             { return k.plural }
func (k kind[T]) New() client.Object         { return k.new() }
func (k kind[T]) NewList() client.ObjectList { return k.newList() }
func (k kind[T]) TemplatePath() []string     { return k.path }
func (k kind[T]) TriggerPath() []string      { return triggerOf(k.path) }
func (k kind[T]) TriggerAnnotation() string  { return "" }

func (k kind[T]) Template(obj client.Object) *corev1.PodTemplateSpec {
	o, ok := obj.(T)
	if !ok {
		return nil
	}
	return Unpacked(k.template(o))
}

var specTemplate = []string{"spec", "template"}

// triggerOf returns the path of the annotations of the pod template at path.
func triggerOf(path []string) []string {
	return append(append([]string(nil), path...), "metadata", "annotations")
}

// Deployment is the adapter for apps/v1 Deployments.
var Deployment Kind = &kind[*appsv1.Deployment]{
	name:     "Deployment",
	plural:   "deployments",
	new:      func() *appsv1.Deployment { return &appsv1.Deployment{} },
	newList:  func() client.ObjectList { return &appsv1.DeploymentList{} },
	template: func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// StatefulSet is the adapter for apps/v1 StatefulSets.
var StatefulSet Kind = &kind[*appsv1.StatefulSet]{
	name:     "StatefulSet",
	plural:   "statefulsets",
	new:      func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
	newList:  func() client.ObjectList { return &appsv1.StatefulSetList{} },
	template: func(o *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// DaemonSet is the adapter for apps/v1 DaemonSets.
var DaemonSet Kind = &kind[*appsv1.DaemonSet]{
	name:     "DaemonSet",
	plural:   "daemonsets",
	new:      func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
	newList:  func() client.ObjectList { return &appsv1.DaemonSetList{} },
	template: func(o *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// CronJob is the adapter for batch/v1 CronJobs: its job template's pod
// template, so the next Jobs it starts run with the new content.
var CronJob Kind = &kind[*batchv1.CronJob]{
	name:     "CronJob",
	plural:   "cronjobs",
	new:      func() *batchv1.CronJob { return &batchv1.CronJob{} },
	newList:  func() client.ObjectList { return &batchv1.CronJobList{} },
	template: func(o *batchv1.CronJob) *corev1.PodTemplateSpec { return &o.Spec.JobTemplate.Spec.Template },
	path:     []string{"spec", "jobTemplate", "spec", "template"},
}

// Job is the adapter for batch/v1 Jobs. A Job's pod template cannot change,
// so a Job is rolled by deleting and creating it again (see jobs.Recreator.Recreate).
var Job Kind = &kind[*batchv1.Job]{
	name:     "Job",
	plural:   "jobs",
	new:      func() *batchv1.Job { return &batchv1.Job{} },
	newList:  func() client.ObjectList { return &batchv1.JobList{} },
	template: func(o *batchv1.Job) *corev1.PodTemplateSpec { return &o.Spec.Template },
	path:     specTemplate,
}

// Builtin returns every built-in kind, in a fixed order.
func Builtin() []Kind { return []Kind{Deployment, StatefulSet, DaemonSet, CronJob, Job} }
