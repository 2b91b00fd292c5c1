package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The annotation that opts a workload in, in Reloader's dialect, which nudge
// reads too, so that one run can measure either.
const (
	autoAnnotation = "reloader.stakater.com/auto"
	// dataKey is the key every change rewrites and env valueFrom reads.
	dataKey = "key-0"
)

// content makes the data of sources: values of printable random text, the
// same filler for every source behind a prefix that makes each one differ.
type content struct {
	keys, valueBytes int
	filler           string
}

func newContent(keys, sourceBytes int) content {
	raw := make([]byte, sourceBytes)
	_, _ = rand.Read(raw)
	return content{keys: keys, valueBytes: sourceBytes / keys, filler: base64.StdEncoding.EncodeToString(raw)}
}

// value returns the value of key k of the source named id, version v.
func (c content) value(id string, k, v int) string {
	prefix := fmt.Sprintf("%s/%d/v%d:", id, k, v)
	if len(prefix) >= c.valueBytes {
		return prefix[:c.valueBytes]
	}
	return prefix + c.filler[:c.valueBytes-len(prefix)]
}

func (c content) key(k int) string { return fmt.Sprintf("key-%d", k) }

// object returns source s with its initial content.
func (c content) object(s Source) metav1.Object {
	meta := metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: map[string]string{"app.kubernetes.io/part-of": "bench"}}
	id := s.Namespace + "/" + s.Name
	if s.Kind == secretKind {
		sec := &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		for k := range c.keys {
			sec.Data[c.key(k)] = []byte(c.value(id, k, 0))
		}
		return sec
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{}}
	for k := range c.keys {
		cm.Data[c.key(k)] = c.value(id, k, 0)
	}
	return cm
}

// deployment returns a one-replica Deployment in Reloader's auto mode whose
// single container uses every source of uses as it says.
func deployment(namespace, name string, uses []Use) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
	for i, u := range uses {
		addUse(&spec, i, u)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        name,
			Labels:      map[string]string{"app.kubernetes.io/part-of": "bench"},
			Annotations: map[string]string{autoAnnotation: "true"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// addUse adds use number i of a source to spec.
func addUse(spec *corev1.PodSpec, i int, u Use) {
	c := &spec.Containers[0]
	ref := corev1.LocalObjectReference{Name: u.Source.Name}
	secret := u.Source.Kind == secretKind
	volume := fmt.Sprintf("v%d", i)
	mount := func() {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/etc/" + volume, ReadOnly: true})
	}
	switch u.Way {
	case EnvFrom:
		if secret {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}})
		} else {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}})
		}
	case Volume:
		v := corev1.Volume{Name: volume}
		if secret {
			v.Secret = &corev1.SecretVolumeSource{SecretName: u.Source.Name}
		} else {
			v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: ref}
		}
		spec.Volumes = append(spec.Volumes, v)
		mount()
	case EnvKey:
		var src corev1.EnvVarSource
		if secret {
			src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: ref, Key: dataKey}
		} else {
			src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: dataKey}
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("V%d", i), ValueFrom: &src})
	case Projected:
		var p corev1.VolumeProjection
		if secret {
			p.Secret = &corev1.SecretProjection{LocalObjectReference: ref}
		} else {
			p.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: ref}
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{p}},
		}})
		mount()
	}
}
