package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/controller"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// A Job nudge deleted to re-create is not lost when the create is refused
// (here by an admission policy): nudge warns, and creates it once it can.
func TestRecreatedJobSurvivesARefusedCreate(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RecreateJobs = true })
	job := migrateJob(e.ns)
	e.create(nt.Secret(e.ns, "db", map[string]string{"password": "p1"}), job)
	e.baselinedObj(job)

	allow := e.refuseJobs()
	e.updateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.g.Eventually(e.events("migrate", controller.ReasonJobNotRecreated)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("could not create it yet"))), "a Warning that the Job is not re-created yet")
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound), "the old Job deleted")

	allow()
	var recreated batchv1.Job
	e.g.Eventually(func() error { return k8s.Get(e.ctx, client.ObjectKeyFromObject(job), &recreated) }).
		WithTimeout(60*time.Second).Should(Succeed(), "nudge to create the Job once admission allows it")
	e.g.Expect(recreated.UID).NotTo(Equal(job.UID))
	e.g.Expect(recreated.Spec.Template.Annotations).To(HaveKeyWithValue(controller.RestartedForAnnotation, "Secret "+e.ns+"/db"))
	e.g.Expect(recreated.Annotations).To(HaveKey(controller.AppliedAnnotation))
	e.g.Eventually(e.events("migrate", controller.ReasonRolled)).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
}

func migrateJob(ns string) *batchv1.Job {
	tmpl := nt.Template("batch", nt.EnvFrom("Secret", "db"))
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate", Annotations: auto},
		Spec: batchv1.JobSpec{Template: tmpl, BackoffLimit: ptr.To[int32](0)}}
}

// refuseJobs makes the API server refuse every Job created in the test's
// namespace, with a ValidatingAdmissionPolicy, and returns once it does. The
// func it returns lifts the refusal and returns once Jobs are accepted.
func (e *env) refuseJobs() (allow func()) {
	e.t.Helper()
	return e.refuse("refuse-jobs-"+e.ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
	}, "false", "no Job may be created here (test)", func() error {
		probe := migrateJob(e.ns)
		probe.Name = "admission-probe"
		return k8s.Create(e.ctx, probe, client.DryRunAll)
	})
}
