package trim

import (
	"strings"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// Workloads returns the cache transform for the built-in kinds
// (Workload) and the unstructured kinds ks (Argo Rollouts, custom
// kinds): of an object of one of ks it keeps the metadata Workload keeps,
// at the kind's template path the pod template as trimTemplate trims it,
// and a Rollout's spec.workloadRef (workload.Referrer); nothing else of its
// spec, nor its status. Like Workload, it is
// idempotent.
func Workloads(ks ...workload.Kind) toolscache.TransformFunc {
	byGVK := map[schema.GroupVersionKind]workload.Kind{}
	for _, k := range ks {
		byGVK[k.New().GetObjectKind().GroupVersionKind()] = k
	}
	return func(obj any) (any, error) {
		obj, err := Workload(obj)
		if u, ok := obj.(*unstructured.Unstructured); ok && err == nil {
			if k, ok := byGVK[u.GroupVersionKind()]; ok {
				trimUnstructured(u, k)
			}
		}
		return obj, err
	}
}

// trimUnstructured trims u, an object of kind k, in place.
func trimUnstructured(u *unstructured.Unstructured, k workload.Kind) {
	tmpl := k.Template(u)
	var ref map[string]any
	if workload.IsReferrer(k) {
		ref, _, _ = unstructured.NestedMap(u.Object, k.(workload.Referrer).RefPath()...)
	}
	moveSeal(u)
	u.Object = map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": u.Object["metadata"]}
	if ref != nil {
		_ = unstructured.SetNestedMap(u.Object, ref, k.(workload.Referrer).RefPath()...)
	}
	if tmpl == nil || len(k.TemplatePath()) == 0 {
		return
	}
	t := trimTemplate(*tmpl)
	if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t); err == nil {
		_ = unstructured.SetNestedMap(u.Object, m, k.TemplatePath()...)
	}
}

// lastApplied is kubectl's copy of a whole manifest in an annotation; nudge
// never reads it and it can double an object's size in the cache.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Workload is the cache transform for workloads. It keeps what the
// reconciler and the source index read: the metadata nudge reads (name,
// namespace, a copy of its name shared by every object in it,
// resourceVersion, generation, annotations but kubectl's
// last-applied-configuration, of the labels only nudge's seal, moved to the
// selfLink (see moveSeal), and of the
// managedFields only a written-back state's owner, see ownership.WrittenBackBy), a
// Deployment's paused flag, and of the pod template its annotations and what
// references a source (see trimPodSpec). A write that needs the whole object
// (the env-vars strategy, re-creating a Job) reads it from the API first; a
// patch's answer replaces the metadata of the trimmed object it was given
// (the whole object for a CronJob a Job is started from). Other objects
// lose only their managedFields (as above), owner references and that annotation (a
// Namespace keeps its labels: --namespace-selector reads them); an
// unstructured one its status too (Workloads trims Argo Rollouts and
// custom kinds as the built-in kinds). A Secrets Store CSI
// SecretProviderClassPodStatus, a source, is trimmed by PodStatus. It is
// idempotent.
func Workload(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == csi.PodStatusGVK {
		return PodStatus(obj)
	}
	if o, ok := obj.(client.Object); ok {
		o.SetNamespace(unique.Make(o.GetNamespace()).Value())
		ownership.TrimManagedFields(o)
		o.SetOwnerReferences(nil)
		o.SetAnnotations(annotations(o.GetAnnotations()))
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		moveSeal(o)
		o.Spec = appsv1.DeploymentSpec{Paused: o.Spec.Paused, Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.StatefulSet:
		moveSeal(o)
		o.Spec = appsv1.StatefulSetSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		moveSeal(o)
		o.Spec = appsv1.DaemonSetSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.DaemonSetStatus{}
	case *batchv1.CronJob:
		moveSeal(o)
		o.Spec = batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: trimTemplate(o.Spec.JobTemplate.Spec.Template)}}}
		o.Status = batchv1.CronJobStatus{}
	case *batchv1.Job:
		moveSeal(o)
		o.Spec = batchv1.JobSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = batchv1.JobStatus{}
	case *unstructured.Unstructured:
		delete(o.Object, "status")
	}
	return obj, nil
}

// moveSeal moves a workload's workload.SealLabel into its selfLink (see
// workload.CachedSealMark; any other selfLink is cleared) and drops its
// labels: nudge reads no other label of a workload, and reads the seal with
// workload.Seal. A selfLink that already holds a seal is kept, so that the
// move is idempotent.
func moveSeal(o metav1.Object) {
	if seal, ok := o.GetLabels()[workload.SealLabel]; ok {
		o.SetSelfLink(workload.CachedSealMark + seal)
	} else if !strings.HasPrefix(o.GetSelfLink(), workload.CachedSealMark) {
		o.SetSelfLink("")
	}
	o.SetLabels(nil)
}

// annotations returns a copy of a without kubectl's last-applied
// configuration (nil when nothing is left), each key a copy shared by every
// object that carries it (unique.Make): the same few keys (the dialects',
// nudge's own) are on every workload, and the decoder gives each object its
// own copy of each.
func annotations(a map[string]string) map[string]string {
	n := len(a)
	if _, ok := a[lastApplied]; ok {
		n--
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for k, v := range a {
		if k != lastApplied {
			out[unique.Make(k).Value()] = v
		}
	}
	return out
}

// trimTemplate keeps of a pod template its annotations (dialects read some)
// and what its pod spec references, packed (workload.PackSpec; Kind's
// Template unpacks it). A template it packed already is unpacked first.
func trimTemplate(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: annotations(t.Annotations)}, Spec: workload.Unpacked(&t).Spec}
	trimPodSpec(&out.Spec)
	return workload.PackSpec(out)
}

// trimPodSpec replaces a pod spec with containers that read exactly the
// sources the pod spec reads (refs.FromPodSpec), in the fewest objects: each
// source in the container that uses it (workload.ContainerFor: the first for
// a source no container uses, as one only an init container or an unmounted
// volume reads), as a whole source an envFrom entry, a source read only in
// part one env entry per key read, each as optional as the reference; a
// SecretProviderClass as a csi volume that mounts it, mounted by that
// container. Of the containers it keeps the first (for its name) and those
// that read a source, in their order, with their names and nothing else.
// FromPodSpec reads the same references from the trimmed spec as from the
// whole one, and ContainerFor finds the same container of each source by
// name (Reloader's last-reloaded-from names it); nothing else reads the
// cached pod spec: the env-vars strategy reads the live object.
func trimPodSpec(p *corev1.PodSpec) {
	// One container at least, unnamed when the pod spec has none (a
	// template of a custom kind), to hold the references.
	containers := make([]corev1.Container, max(len(p.Containers), 1))
	for i, c := range p.Containers {
		containers[i].Name = c.Name
	}
	var volumes []corev1.Volume
	users := workload.Containers("", p)
	for _, r := range refs.FromPodSpec("", p) {
		c := &containers[0]
		if len(p.Containers) > 0 {
			c = &containers[users[r.Source]]
		}
		if r.Kind == refs.SecretProviderClass {
			volumes = append(volumes, corev1.Volume{Name: r.Name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: refs.CSIDriver, VolumeAttributes: map[string]string{refs.SecretProviderClassAttribute: r.Name}}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: r.Name})
			continue
		}
		optional := r.Optional
		name := corev1.LocalObjectReference{Name: r.Name}
		if r.Whole() {
			from := corev1.EnvFromSource{}
			if r.Kind == refs.ConfigMap {
				from.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: name, Optional: &optional}
			} else {
				from.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: name, Optional: &optional}
			}
			c.EnvFrom = append(c.EnvFrom, from)
			continue
		}
		for _, key := range r.Keys {
			from := &corev1.EnvVarSource{}
			if r.Kind == refs.ConfigMap {
				from.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: name, Key: key, Optional: &optional}
			} else {
				from.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: name, Key: key, Optional: &optional}
			}
			c.Env = append(c.Env, corev1.EnvVar{ValueFrom: from})
		}
	}
	*p = corev1.PodSpec{Volumes: volumes}
	for i, c := range containers {
		if (i == 0 && c.Name != "") || len(c.Env) > 0 || len(c.EnvFrom) > 0 || len(c.VolumeMounts) > 0 {
			p.Containers = append(p.Containers, c)
		}
	}
}
