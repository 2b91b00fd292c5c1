package workload_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/workload"
)

func TestPackSpec(t *testing.T) {
	reads := corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Optional: ptr.To(false)}}},
		Env: []corev1.EnvVar{{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "user", Optional: ptr.To(true)}}}}}}}
	for name, tc := range map[string]struct {
		in         corev1.PodTemplateSpec
		wantPacked bool
	}{
		"a spec with references is packed into the selfLink": {
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}, Spec: reads}, true},
		"a container without references is packed too": {
			corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}, true},
		"an empty spec is left as it is": {
			corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			packed := workload.PackSpec(*tc.in.DeepCopy())
			if !tc.wantPacked {
				g.Expect(packed).To(Equal(tc.in))
				return
			}
			g.Expect(packed.GetSelfLink()).To(HavePrefix(workload.CachedSpecMark))
			g.Expect(packed.Spec).To(Equal(corev1.PodSpec{}), "the spec moved to the selfLink")
			g.Expect(packed.Annotations).To(Equal(tc.in.Annotations), "the metadata kept")
			got := workload.Unpacked(&packed)
			g.Expect(*got).To(Equal(tc.in), "unpacked as it was")
			got.Labels = map[string]string{"written": "x"}
			got.Spec.Containers[0].Name = "changed"
			g.Expect(workload.Unpacked(&packed)).To(Equal(&tc.in), "writes to the unpacked copy do not reach the packed template")
		})
	}
}

func TestUnpackedOfAnUnpackedTemplateIsItself(t *testing.T) {
	g := NewWithT(t)
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}}}
	g.Expect(workload.Deployment.Template(d)).To(BeIdenticalTo(&d.Spec.Template), "a template as the API server serves it, not a copy")
	g.Expect(workload.Unpacked(nil)).To(BeNil())

	d.Spec.Template = workload.PackSpec(d.Spec.Template)
	g.Expect(workload.Deployment.Template(d).Spec.Containers).To(HaveExactElements(HaveField("Name", "app")), "Template unpacks")
}
