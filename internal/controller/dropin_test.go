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

	"nudge.dev/nudge/internal/dialect"
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

func TestCronJobTemplateRolls(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.CronJobStartJob = true })
	cj := cronJob(e.NS, "report", auto, nt.EnvFrom("ConfigMap", "app"))
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), cj)
	e.BaselinedObj(cj)
	e.G.Consistently(e.Generation(cj)).WithTimeout(2 * time.Second).Should(Equal(int64(1)))

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(e.Generation(cj)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the job template rolled")
	e.G.Expect(cj.Spec.JobTemplate.Spec.Template.Annotations).To(HaveKey(workload.RestartedAtAnnotation))
	jobs := func() []batchv1.Job {
		var l batchv1.JobList
		e.G.Expect(suite.K8s.List(e.Ctx, &l, client.InNamespace(e.NS))).To(Succeed())
		return l.Items
	}
	e.G.Eventually(jobs).WithTimeout(10*time.Second).Should(ConsistOf(And(
		HaveField("Spec.Template.Annotations", HaveKey(workload.RestartedAtAnnotation)),
		HaveField("ObjectMeta.OwnerReferences", ContainElement(HaveField("Name", "report"))),
	)), "one Job started at once from the new template")
	e.G.Consistently(e.Generation(cj)).WithTimeout(3 * time.Second).Should(Equal(int64(2)))
}

func TestJobsAreRecreatedOnlyWhenAskedFor(t *testing.T) {
	for name, recreate := range map[string]bool{"with --recreate-jobs": true, "by default": false} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RecreateJobs = recreate })
			tmpl := nt.Template("batch", nt.EnvFrom("Secret", "db"))
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "migrate", Annotations: auto},
				Spec: batchv1.JobSpec{Template: tmpl, BackoffLimit: ptr.To[int32](0)}}
			e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), job)
			uid := job.UID
			if recreate {
				e.BaselinedObj(job)
			}
			e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
			current := func() string {
				var j batchv1.Job
				if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &j); err != nil {
					return "missing"
				}
				return string(j.UID)
			}
			if !recreate {
				e.G.Consistently(current).WithTimeout(3*time.Second).Should(Equal(string(uid)), "the Job left alone")
				return
			}
			e.G.Eventually(current).WithTimeout(15*time.Second).Should(And(Not(Equal(string(uid))), Not(Equal("missing"))), "the Job re-created")
			var j batchv1.Job
			e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &j)).To(Succeed())
			e.G.Expect(j.Spec.Template.Annotations).To(HaveKey(workload.RestartedAtAnnotation))
			e.G.Expect(j.Annotations).To(HaveKey(workload.AppliedAnnotation))
			second := j.UID
			e.G.Consistently(current).WithTimeout(3*time.Second).Should(Equal(string(second)), "re-created once")
		})
	}
}

// Argo Rollouts: detected when its CRD appears after nudge started, and when
// it is there at start; the pod template by default, spec.restartAt with
// Reloader's rollout-strategy "restart".
func TestArgoRollouts(t *testing.T) {
	e := setup(t, true, nil) // started before the CRD may exist
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	// A second nudge started now finds the CRD at start.
	ns2, err := suite.Plane.GenerateNamespace(e.Ctx, "it-")
	e.G.Expect(err).NotTo(HaveOccurred())
	nt.Start(t, suite.Plane.Config(), ns2, nil)
	atStart := nt.Rollout(ns2, "web", auto, nt.EnvFrom("ConfigMap", "app"))
	e.Create(nt.ConfigMap(ns2, "app", map[string]string{"a": "1"}), atStart)
	e.BaselinedObj(atStart)

	byTemplate := nt.Rollout(e.NS, "canary", auto, nt.EnvFrom("ConfigMap", "app"))
	byRestart := nt.Rollout(e.NS, "restart", map[string]string{"nudge.dev/auto": "true", dialect.ReloaderRolloutStrategy: "restart"},
		nt.EnvFrom("ConfigMap", "app"))
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), byTemplate, byRestart)
	e.BaselinedObj(byTemplate)
	e.BaselinedObj(byRestart)

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(e.Generation(byTemplate)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the Rollout's template rolled")
	v, _, _ := unstructured.NestedString(byTemplate.Object, "spec", "template", "metadata", "annotations", workload.RestartedAtAnnotation)
	e.G.Expect(v).NotTo(BeEmpty())
	e.G.Eventually(func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(byRestart), byRestart)).To(Succeed())
		s, _, _ := unstructured.NestedString(byRestart.Object, "spec", "restartAt")
		return s
	}).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "spec.restartAt set")
	_, found, _ := unstructured.NestedString(byRestart.Object, "spec", "template", "metadata", "annotations", workload.RestartedAtAnnotation)
	e.G.Expect(found).To(BeFalse(), "the template left alone with the restart strategy")

	var cm corev1.ConfigMap
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: ns2, Name: "app"}, &cm)).To(Succeed())
	cm.Data["a"] = "2"
	e.G.Expect(suite.K8s.Update(e.Ctx, &cm)).To(Succeed())
	e.G.Eventually(e.Generation(atStart)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "the Rollout seen at start rolled")
}
