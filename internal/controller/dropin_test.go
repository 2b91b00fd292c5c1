package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/controller"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

func cronJob(ns, name string, annotations map[string]string, opts ...nt.PodOption) *batchv1.CronJob {
	t := nt.Template(name, opts...)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: batchv1.CronJobSpec{
			Schedule:    "0 0 1 1 *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}},
		},
	}
}

// generation returns a function reading obj's generation: for every kind but
// Deployment it counts spec writes (a Deployment's also counts annotation
// writes).
func (e *env) generation(obj client.Object) func() int64 {
	return func() int64 {
		e.g.Expect(k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetGeneration()
	}
}

func (e *env) baselinedObj(obj client.Object) {
	e.t.Helper()
	e.g.Eventually(func() string {
		e.g.Expect(k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", obj.GetName())
}

func TestCronJobTemplateRolls(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.CronJobStartJob = true })
	cj := cronJob(e.ns, "report", auto, nt.EnvFrom("ConfigMap", "app"))
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}), cj)
	e.baselinedObj(cj)
	e.g.Consistently(e.generation(cj)).WithTimeout(2 * time.Second).Should(Equal(int64(1)))

	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.g.Eventually(e.generation(cj)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the job template rolled")
	e.g.Expect(cj.Spec.JobTemplate.Spec.Template.Annotations).To(HaveKey(workload.RestartedAtAnnotation))
	jobs := func() []batchv1.Job {
		var l batchv1.JobList
		e.g.Expect(k8s.List(e.ctx, &l, client.InNamespace(e.ns))).To(Succeed())
		return l.Items
	}
	e.g.Eventually(jobs).WithTimeout(10*time.Second).Should(ConsistOf(And(
		HaveField("Spec.Template.Annotations", HaveKey(workload.RestartedAtAnnotation)),
		HaveField("ObjectMeta.OwnerReferences", ContainElement(HaveField("Name", "report"))),
	)), "one Job started at once from the new template")
	e.g.Consistently(e.generation(cj)).WithTimeout(3 * time.Second).Should(Equal(int64(2)))
}

func TestJobsAreRecreatedOnlyWhenAskedFor(t *testing.T) {
	for name, recreate := range map[string]bool{"with --recreate-jobs": true, "by default": false} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RecreateJobs = recreate })
			tmpl := nt.Template("batch", nt.EnvFrom("Secret", "db"))
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "migrate", Annotations: auto},
				Spec: batchv1.JobSpec{Template: tmpl, BackoffLimit: ptr.To[int32](0)}}
			e.create(nt.Secret(e.ns, "db", map[string]string{"password": "p1"}), job)
			uid := job.UID
			if recreate {
				e.baselinedObj(job)
			}
			e.updateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
			current := func() string {
				var j batchv1.Job
				if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(job), &j); err != nil {
					return "missing"
				}
				return string(j.UID)
			}
			if !recreate {
				e.g.Consistently(current).WithTimeout(3*time.Second).Should(Equal(string(uid)), "the Job left alone")
				return
			}
			e.g.Eventually(current).WithTimeout(15*time.Second).Should(And(Not(Equal(string(uid))), Not(Equal("missing"))), "the Job re-created")
			var j batchv1.Job
			e.g.Expect(k8s.Get(e.ctx, client.ObjectKeyFromObject(job), &j)).To(Succeed())
			e.g.Expect(j.Spec.Template.Annotations).To(HaveKey(workload.RestartedAtAnnotation))
			e.g.Expect(j.Annotations).To(HaveKey(workload.AppliedAnnotation))
			second := j.UID
			e.g.Consistently(current).WithTimeout(3*time.Second).Should(Equal(string(second)), "re-created once")
		})
	}
}

// Argo Rollouts: detected when its CRD appears after nudge started, and when
// it is there at start; the pod template by default, spec.restartAt with
// Reloader's rollout-strategy "restart".
func TestArgoRollouts(t *testing.T) {
	e := setup(t, true, nil) // started before the CRD may exist
	nt.InstallCRD(t, k8s, nt.RolloutCRD(t))
	// A second nudge started now finds the CRD at start.
	ns2, err := plane.GenerateNamespace(e.ctx, "it-")
	e.g.Expect(err).NotTo(HaveOccurred())
	nt.Start(t, plane.Config(), ns2, nil)
	atStart := nt.Rollout(ns2, "web", auto, nt.EnvFrom("ConfigMap", "app"))
	e.create(nt.ConfigMap(ns2, "app", map[string]string{"a": "1"}), atStart)
	e.baselinedObj(atStart)

	byTemplate := nt.Rollout(e.ns, "canary", auto, nt.EnvFrom("ConfigMap", "app"))
	byRestart := nt.Rollout(e.ns, "restart", map[string]string{"nudge.dev/auto": "true", controller.RolloutStrategyAnnotation: "restart"},
		nt.EnvFrom("ConfigMap", "app"))
	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}), byTemplate, byRestart)
	e.baselinedObj(byTemplate)
	e.baselinedObj(byRestart)

	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.g.Eventually(e.generation(byTemplate)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the Rollout's template rolled")
	v, _, _ := unstructured.NestedString(byTemplate.Object, "spec", "template", "metadata", "annotations", workload.RestartedAtAnnotation)
	e.g.Expect(v).NotTo(BeEmpty())
	e.g.Eventually(func() string {
		e.g.Expect(k8s.Get(e.ctx, client.ObjectKeyFromObject(byRestart), byRestart)).To(Succeed())
		s, _, _ := unstructured.NestedString(byRestart.Object, "spec", "restartAt")
		return s
	}).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "spec.restartAt set")
	_, found, _ := unstructured.NestedString(byRestart.Object, "spec", "template", "metadata", "annotations", workload.RestartedAtAnnotation)
	e.g.Expect(found).To(BeFalse(), "the template left alone with the restart strategy")

	var cm corev1.ConfigMap
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKey{Namespace: ns2, Name: "app"}, &cm)).To(Succeed())
	cm.Data["a"] = "2"
	e.g.Expect(k8s.Update(e.ctx, &cm)).To(Succeed())
	e.g.Eventually(e.generation(atStart)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the Rollout seen at start rolled")
}
