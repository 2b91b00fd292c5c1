package nudgetest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/workload"
)

// ConfigMap returns a ConfigMap with data.
func ConfigMap(namespace, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
}

// Secret returns an Opaque Secret with data given as strings.
func Secret(namespace, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// PodOption changes a pod template.
type PodOption func(*corev1.PodTemplateSpec)

// EnvFrom makes the container read every key of a ConfigMap or Secret.
func EnvFrom(kind, name string) PodOption {
	return func(t *corev1.PodTemplateSpec) {
		src := corev1.EnvFromSource{}
		if kind == "Secret" {
			src.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		} else {
			src.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		}
		t.Spec.Containers[0].EnvFrom = append(t.Spec.Containers[0].EnvFrom, src)
	}
}

// EnvKey makes the container read one key of a ConfigMap or Secret into an
// env var.
func EnvKey(kind, name, key string, optional bool) PodOption {
	return func(t *corev1.PodTemplateSpec) {
		sel := corev1.EnvVarSource{}
		ref := corev1.LocalObjectReference{Name: name}
		if kind == "Secret" {
			sel.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: ref, Key: key, Optional: ptr.To(optional)}
		} else {
			sel.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: key, Optional: ptr.To(optional)}
		}
		c := &t.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "V" + string(rune('A'+len(c.Env))), ValueFrom: &sel})
	}
}

// Volume mounts a whole ConfigMap or Secret as a volume.
func Volume(kind, name string) PodOption {
	return func(t *corev1.PodTemplateSpec) {
		v := corev1.Volume{Name: "v-" + name}
		if kind == "Secret" {
			v.Secret = &corev1.SecretVolumeSource{SecretName: name}
		} else {
			v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		}
		t.Spec.Volumes = append(t.Spec.Volumes, v)
		c := &t.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/etc/" + name, ReadOnly: true})
	}
}

// Template returns a one-container pod template labelled app=name.
func Template(name string, opts ...PodOption) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// Deployment returns a Deployment of replicas pods with annotations on its
// metadata.
func Deployment(namespace, name string, replicas int32, annotations map[string]string, opts ...PodOption) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: Template(name, opts...),
		},
	}
}

// StatefulSet returns a StatefulSet of replicas pods with annotations on its
// metadata.
func StatefulSet(namespace, name string, replicas int32, annotations map[string]string, opts ...PodOption) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:            Template(name, opts...),
			PodManagementPolicy: appsv1.ParallelPodManagement,
		},
	}
}

// DaemonSet returns a DaemonSet with annotations on its metadata.
func DaemonSet(namespace, name string, annotations map[string]string, opts ...PodOption) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: Template(name, opts...),
		},
	}
}

// Rollout returns an Argo Rollout (an unstructured object) with the pod
// template and selector of Deployment(namespace, name, 1, annotations,
// opts...) and a canary strategy.
func Rollout(namespace, name string, annotations map[string]string, opts ...PodOption) *unstructured.Unstructured {
	d := Deployment(namespace, name, 1, annotations, opts...)
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec)
	if err != nil {
		panic(err) // a DeploymentSpec always converts
	}
	spec["strategy"] = map[string]any{"canary": map[string]any{}}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(workload.RolloutGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

// RolloutRef returns an Argo Rollout (an unstructured object) without a pod
// template, whose spec.workloadRef names the apps/v1 Deployment deployment
// of its namespace, with a canary strategy
// (https://argo-rollouts.readthedocs.io/en/stable/features/workload-referencing/).
func RolloutRef(namespace, name string, annotations map[string]string, deployment string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas":    int64(1),
		"strategy":    map[string]any{"canary": map[string]any{}},
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
	}}}
	u.SetGroupVersionKind(workload.RolloutGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}
