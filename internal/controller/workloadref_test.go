package controller_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// TestRolloutWorkloadRef: an Argo Rollout whose spec.workloadRef names a
// Deployment is rolled, once per change of a ConfigMap the Deployment's pod
// spec reads, by spec.restartAt on the Rollout; nudge never writes the
// Deployment. A change of the Deployment's pod template reaches the
// Rollout: a ConfigMap it reads from then on rolls it. A workloadRef to a
// Deployment that does not exist gives a Warning and rolls nothing, until
// the Deployment is created.
func TestRolloutWorkloadRef(t *testing.T) {
	e := setup(t, false, nil)
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
	pods := nt.Deployment(e.NS, "pods", 0, nil, nt.EnvFrom("ConfigMap", "app"))
	ro := nt.RolloutRef(e.NS, "web", auto, "pods")
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), nt.ConfigMap(e.NS, "later", map[string]string{"b": "1"}), pods, ro)
	e.BaselinedObj(ro)
	e.G.Expect(ro.GetAnnotations()[workload.AppliedAnnotation]).To(ContainSubstring("ConfigMap/app="), "the Deployment's reference recorded on the Rollout")
	dep := e.Deployment("pods")

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	restartAt := func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(ro), ro)).To(Succeed())
		s, _, _ := unstructured.NestedString(ro.Object, "spec", "restartAt")
		return s
	}
	e.G.Eventually(restartAt).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "spec.restartAt set on the Rollout")
	first := restartAt()
	_, err := time.Parse(time.RFC3339, first)
	e.G.Expect(err).NotTo(HaveOccurred(), "spec.restartAt is an RFC 3339 time")
	e.G.Consistently(e.Generation(ro)).WithTimeout(3*time.Second).Should(Equal(int64(2)), "one write of the Rollout's spec: once")
	_, found, _ := unstructured.NestedMap(ro.Object, "spec", "template")
	e.G.Expect(found).To(BeFalse(), "no pod template written into the Rollout")
	after := e.Deployment("pods")
	e.G.Expect(after.ResourceVersion).To(Equal(dep.ResourceVersion), "the Deployment untouched")
	e.G.Expect(after.Generation).To(Equal(dep.Generation))
	for _, f := range after.ManagedFields {
		e.G.Expect(f.Manager).NotTo(Equal(workload.FieldManager), "nudge never wrote the Deployment")
	}

	// The Deployment's pod template now reads ConfigMap later too: the
	// Rollout is baselined with it (no rollout), and its change rolls it.
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(after), after)).To(Succeed())
	nt.EnvFrom("ConfigMap", "later")(&after.Spec.Template)
	e.G.Expect(suite.K8s.Update(e.Ctx, after)).To(Succeed())
	e.G.Eventually(func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(ro), ro)).To(Succeed())
		return ro.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(10*time.Second).Should(ContainSubstring("ConfigMap/later="), "the Rollout re-baselined with the Deployment's new reference")
	e.G.Expect(restartAt()).To(Equal(first), "a new reference rolls nothing")
	e.UpdateConfigMap("later", func(c *corev1.ConfigMap) { c.Data["b"] = "2" })
	e.G.Eventually(restartAt).WithTimeout(10*time.Second).ShouldNot(Equal(first), "the new reference's change rolls the Rollout")
	e.G.Consistently(e.Generation(ro)).WithTimeout(3*time.Second).Should(Equal(int64(3)), "once")

	// A workloadRef to a Deployment that does not exist.
	orphan := nt.RolloutRef(e.NS, "orphan", auto, "nope")
	e.Create(orphan)
	e.G.Eventually(e.Events("orphan", record.ReasonWorkloadRefMissing)).WithTimeout(20*time.Second).Should(HaveLen(1), "a Warning names the missing Deployment")
	ev := e.Events("orphan", record.ReasonWorkloadRefMissing)()[0]
	e.G.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
	e.G.Expect(ev.Note).To(ContainSubstring("Deployment " + e.NS + "/nope"))
	e.G.Consistently(func() map[string]string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
		return orphan.GetAnnotations()
	}).WithTimeout(3*time.Second).ShouldNot(HaveKey(workload.AppliedAnnotation), "nothing recorded nor rolled")
	e.G.Expect(orphan.GetGeneration()).To(Equal(int64(1)))
	// Its creation brings the Rollout back.
	e.Create(nt.Deployment(e.NS, "nope", 0, nil, nt.EnvFrom("ConfigMap", "app")))
	e.BaselinedObj(orphan)
	e.G.Expect(strings.Contains(orphan.GetAnnotations()[workload.AppliedAnnotation], "ConfigMap/app=")).To(BeTrue())
	var deps appsv1.DeploymentList
	e.G.Expect(suite.K8s.List(e.Ctx, &deps, client.InNamespace(e.NS))).To(Succeed())
	for _, d := range deps.Items {
		e.G.Expect(d.Annotations).NotTo(HaveKey(workload.AppliedAnnotation), "Deployment %s carries no state of nudge's", d.Name)
	}
}
