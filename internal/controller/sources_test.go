package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// TestTrimWorkloadKeepsEveryReference: the cache's trimmed pod template
// yields the same references and container choices as the whole one.
func TestTrimWorkloadKeepsEveryReference(t *testing.T) {
	g := NewWithT(t)
	cmRef := corev1.LocalObjectReference{Name: "app"}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "i", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "user"}}}}}},
		Containers: []corev1.Container{
			{Name: "side", Image: "s", Args: []string{"--big"}, Resources: corev1.ResourceRequirements{}},
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
		NodeSelector: map[string]string{"disk": "ssd"},
		Tolerations:  []corev1.Toleration{{Key: "k"}},
	}}}}
	whole := d.Spec.Template.Spec.DeepCopy()
	_, err := TrimWorkload(d)
	g.Expect(err).NotTo(HaveOccurred())
	trimmed := &d.Spec.Template.Spec

	g.Expect(refs.FromPodSpec("ns", trimmed)).To(Equal(refs.FromPodSpec("ns", whole)))
	for _, r := range refs.FromPodSpec("ns", whole) {
		g.Expect(workload.ContainerFor(trimmed, r.Source)).To(Equal(workload.ContainerFor(whole, r.Source)), "container for %s", r.Source)
	}
	g.Expect(trimmed.Containers[1].Image).To(BeEmpty(), "images are not kept")
	g.Expect(trimmed.NodeSelector).To(BeNil())
	g.Expect(trimmed.Volumes).To(HaveLen(2), "only source volumes")

	again := d.DeepCopy()
	_, _ = TrimWorkload(again)
	g.Expect(again).To(Equal(d), "idempotent")
}
