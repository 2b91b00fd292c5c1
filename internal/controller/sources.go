package controller

import (
	"bytes"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// digestedMark is written to the selfLink of a cached source once its values
// are replaced by digests, so the transform is idempotent. selfLink is
// deprecated precisely because the API server no longer sets it, which makes
// it a field no real object carries.
const digestedMark = "nudge:digested"

// DigestSource returns the cache transform for ConfigMaps and Secrets: it
// replaces every value (data and binaryData) with its SHA-256 (see
// fingerprint.Sum), so the cache never holds a source's content, and keeps of
// the metadata only what nudge reads: name, namespace, resourceVersion, the
// annotations named in keep (the ignore and match marks,
// dialect.Parser.SourceAnnotations), and the labels only when keepLabels
// (for --resource-label-selector). Other objects pass through unchanged. It
// is idempotent.
func DigestSource(keepLabels bool, keep []string) func(any) (any, error) {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			//lint:ignore SA1019 see digestedMark
			if o.SelfLink == digestedMark {
				return o, nil
			}
			// In place: the decoded map is the one kept, no second one.
			d := o.Data
			for k, v := range d {
				d[k] = fingerprint.SumString(v)
			}
			if d == nil && len(o.BinaryData) > 0 {
				d = make(map[string]string, len(o.BinaryData))
			}
			for k, v := range o.BinaryData {
				d[k] = fingerprint.Sum(v)
			}
			*o = corev1.ConfigMap{ObjectMeta: sourceMeta(o.ObjectMeta, keepLabels, keep), Data: d}
		case *corev1.Secret:
			//lint:ignore SA1019 see digestedMark
			if o.SelfLink == digestedMark {
				return o, nil
			}
			for k, v := range o.Data {
				o.Data[k] = []byte(fingerprint.Sum(v))
			}
			*o = corev1.Secret{ObjectMeta: sourceMeta(o.ObjectMeta, keepLabels, keep), Data: o.Data}
		}
		return obj, nil
	}
}

// sourceMeta keeps what nudge reads of a source's metadata, marked digested.
func sourceMeta(m metav1.ObjectMeta, keepLabels bool, keep []string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}
	if keepLabels {
		out.Labels = m.Labels
	}
	//lint:ignore SA1019 see digestedMark
	out.SelfLink = digestedMark
	for _, k := range keep {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// digestsOf returns the per-key digests of a source read from the cache, or
// nil for any other object.
func digestsOf(obj client.Object) fingerprint.Digests {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return fingerprint.Digests(o.Data)
	case *corev1.Secret:
		d := make(fingerprint.Digests, len(o.Data))
		for k, v := range o.Data {
			d[k] = string(v)
		}
		return d
	}
	return nil
}

// sourceChanged passes creates, deletes and those updates of a source that
// change its content or a mark nudge reads on it (ignore, match); a change of
// other labels or annotations is dropped here (rule 2) before any workload is
// looked up. d names the marks.
func sourceChanged(d dialect.Parser) predicate.Funcs {
	return predicate.Funcs{
		// A source listed at start brings no news: every workload is reconciled
		// from its own initial event.
		CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return true
			}
			oa, na := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			if d.Ignored(oa) != d.Ignored(na) || d.Matched(oa) != d.Matched(na) {
				return true
			}
			return ContentChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// ContentChanged reports whether two versions of a ConfigMap or Secret hold
// different content: data or binaryData (as cached, their digests). Labels
// and annotations do not count. Objects of other or mismatched types count
// as changed.
func ContentChanged(old, new client.Object) bool {
	switch o := old.(type) {
	case *corev1.ConfigMap:
		n, ok := new.(*corev1.ConfigMap)
		return !ok || !maps.Equal(o.Data, n.Data) || !maps.EqualFunc(o.BinaryData, n.BinaryData, bytes.Equal)
	case *corev1.Secret:
		n, ok := new.(*corev1.Secret)
		return !ok || !maps.EqualFunc(o.Data, n.Data, bytes.Equal)
	}
	return true
}

// lastApplied is kubectl's copy of a whole manifest in an annotation; nudge
// never reads it and it can double an object's size in the cache.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TrimWorkload is the cache transform for workloads. It keeps what the
// reconciler and the source index read: the metadata nudge reads (name,
// namespace, resourceVersion, generation, annotations but kubectl's
// last-applied-configuration, of the labels only nudge's seal, and of the
// managedFields only a written-back state's owner, see WrittenBackBy), a
// Deployment's paused flag, and of the pod template its annotations and what
// references a source (see trimPodSpec). A write that needs the whole object
// (the env-vars strategy, re-creating a Job) reads it from the API first, and
// a patch's response replaces the trimmed object it was given. Other objects
// lose only their managedFields (as above), owner references and that annotation (a
// Namespace keeps its labels: --namespace-selector reads them); an
// unstructured one its status too (TrimWorkloads trims Argo Rollouts and
// custom kinds as the built-in kinds). A Secrets Store CSI
// SecretProviderClassPodStatus, a source, is trimmed by TrimPodStatus. It is
// idempotent.
func TrimWorkload(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == PodStatusGVK {
		return TrimPodStatus(obj)
	}
	if o, ok := obj.(client.Object); ok {
		trimManagedFields(o)
		o.SetOwnerReferences(nil)
		if a := o.GetAnnotations(); a[lastApplied] != "" {
			a = maps.Clone(a)
			delete(a, lastApplied)
			o.SetAnnotations(a)
		}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Labels = sealOnly(o.Labels)
		o.Spec = appsv1.DeploymentSpec{Paused: o.Spec.Paused, Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.StatefulSet:
		o.Labels = sealOnly(o.Labels)
		o.Spec = appsv1.StatefulSetSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		o.Labels = sealOnly(o.Labels)
		o.Spec = appsv1.DaemonSetSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = appsv1.DaemonSetStatus{}
	case *batchv1.CronJob:
		o.Labels = sealOnly(o.Labels)
		o.Spec = batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: trimTemplate(o.Spec.JobTemplate.Spec.Template)}}}
		o.Status = batchv1.CronJobStatus{}
	case *batchv1.Job:
		o.Labels = sealOnly(o.Labels)
		o.Spec = batchv1.JobSpec{Template: trimTemplate(o.Spec.Template)}
		o.Status = batchv1.JobStatus{}
	case *unstructured.Unstructured:
		delete(o.Object, "status")
	}
	return obj, nil
}

// sealOnly returns labels with only SealLabel left (in place), or nil
// without it: nudge reads no other label of a workload.
func sealOnly(labels map[string]string) map[string]string {
	if _, ok := labels[SealLabel]; !ok {
		return nil
	}
	maps.DeleteFunc(labels, func(k, _ string) bool { return k != SealLabel })
	return labels
}

// trimTemplate keeps of a pod template its annotations (dialects read some)
// and what its pod spec references.
func trimTemplate(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: t.Annotations}, Spec: t.Spec}
	trimPodSpec(&out.Spec)
	return out
}

// trimPodSpec replaces a pod spec with one container that reads exactly the
// sources the pod spec reads (refs.FromPodSpec), in the fewest objects (a
// SecretProviderClass as a csi volume that mounts it): a
// whole source as an envFrom entry, a source read only in part as one env
// entry per key read, each as optional as the reference. FromPodSpec reads
// the same references from the trimmed spec as from the whole one, and
// nothing else reads the cached pod spec: the env-vars strategy reads the
// live object.
func trimPodSpec(p *corev1.PodSpec) {
	var c corev1.Container
	var volumes []corev1.Volume
	for _, r := range refs.FromPodSpec("", p) {
		if r.Kind == refs.SecretProviderClass {
			volumes = append(volumes, corev1.Volume{Name: r.Name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: refs.CSIDriver, VolumeAttributes: map[string]string{refs.SecretProviderClassAttribute: r.Name}}}})
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
	if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
		p.Containers = []corev1.Container{c}
	}
}
