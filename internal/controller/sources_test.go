package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// TestTrimWorkloadKeepsEveryReference: the cache's trimmed pod template
// yields the same references as the whole one.
func TestTrimWorkloadKeepsEveryReference(t *testing.T) {
	g := NewWithT(t)
	cmRef := corev1.LocalObjectReference{Name: "app"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", SealLabel: "s"}}, Spec: appsv1.DeploymentSpec{
		Paused: true, Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "user"}}}}}},
			Containers: []corev1.Container{
				{Name: "side", Image: "s", Args: []string{"--big"}, Env: []corev1.EnvVar{{Name: "PLAIN", Value: "x"},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{Name: "app", Image: "a", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}, {Name: "scratch", MountPath: "/tmp"}}},
			},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Optional: ptr.To(true),
					Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "c"}}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}}}}}},
			},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug"}}}}}}},
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "k"}},
		}}}}
	whole := d.Spec.Template.Spec.DeepCopy()
	_, err := TrimWorkload(d)
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := &d.Spec.Template.Spec

	g.Expect(refs.FromPodSpec("ns", trimmed)).To(Equal(refs.FromPodSpec("ns", whole)))
	g.Expect(refs.FromPodSpec("ns", trimmed)).To(HaveLen(5))
	g.Expect(trimmed.Containers).To(HaveLen(1), "every container's references in one")
	g.Expect(trimmed.Containers[0].Env).To(HaveLen(2), "a key each of db and tls")
	g.Expect(trimmed.Containers[0].EnvFrom).To(HaveLen(3), "the whole of app, extra and debug")
	g.Expect(trimmed.InitContainers).To(BeNil())
	g.Expect(trimmed.Containers[0].Image).To(BeEmpty(), "images are not kept")
	g.Expect(trimmed.NodeSelector).To(BeNil())
	g.Expect(trimmed.Volumes).To(BeNil(), "volumes' references are in the container")
	g.Expect(d.Labels).To(Equal(map[string]string{SealLabel: "s"}), "of the labels only the seal")
	g.Expect(d.Spec.Paused).To(BeTrue(), "the pause period reads it")
	g.Expect(d.Spec.Selector).To(BeNil())
	g.Expect(d.Spec.Replicas).To(BeNil())
	g.Expect(d.Spec.Template.Labels).To(BeNil())
	g.Expect(d.Spec.Template.Annotations).To(Equal(map[string]string{"a": "b"}), "dialects read template annotations")

	again := d.DeepCopy()
	_, _ = TrimWorkload(again)
	g.Expect(again).To(Equal(d), "idempotent")
}

// TestTrimWorkloadKeepsNamespaceLabels: TrimWorkload is the cache's default
// transform, so it also sees Namespaces, whose labels --namespace-selector
// reads.
func TestTrimWorkloadKeepsNamespaceLabels(t *testing.T) {
	g := NewWithT(t)
	labels := map[string]string{"team": "a", SealLabel: "x"}
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: labels}}
	_, err := TrimWorkload(ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns.Labels).To(Equal(map[string]string{"team": "a", SealLabel: "x"}))
}

// TestDigestSourceKeepsNoValue: a cached source holds digests, never a value,
// and its labels only when --resource-label-selector needs them.
func TestDigestSourceKeepsNoValue(t *testing.T) {
	for _, keepLabels := range []bool{false, true} {
		g := NewWithT(t)
		meta := metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "7", UID: "u",
			Labels:      map[string]string{"reload": "yes"},
			Annotations: map[string]string{"reloader.stakater.com/match": "true", "note": "n"}}
		s := &corev1.Secret{ObjectMeta: *meta.DeepCopy(), Data: map[string][]byte{"password": []byte("hunter2")}}
		cm := &corev1.ConfigMap{ObjectMeta: *meta.DeepCopy(), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {2}}}
		transform := DigestSource(keepLabels, dialect.Parser{}.SourceAnnotations())
		for _, obj := range []any{s, cm} {
			_, err := transform(obj)
			g.Expect(err).NotTo(HaveOccurred())
		}

		g.Expect(s.Data).To(Equal(map[string][]byte{"password": []byte(fingerprint.Sum([]byte("hunter2")))}))
		g.Expect(cm.Data).To(Equal(map[string]string{"a": fingerprint.Sum([]byte("1")), "b": fingerprint.Sum([]byte{2})}))
		g.Expect(cm.BinaryData).To(BeNil())
		for _, m := range []metav1.ObjectMeta{s.ObjectMeta, cm.ObjectMeta} {
			g.Expect([]string{m.Name, m.Namespace, m.ResourceVersion, string(m.UID)}).To(Equal([]string{"db", "ns", "7", ""}))
			g.Expect(m.Annotations).To(Equal(map[string]string{"reloader.stakater.com/match": "true"}))
			if keepLabels {
				g.Expect(m.Labels).To(Equal(meta.Labels))
			} else {
				g.Expect(m.Labels).To(BeNil())
			}
		}
		again := s.DeepCopy()
		_, _ = transform(again)
		g.Expect(again).To(Equal(s), "idempotent")
	}
}
