package jobs_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// A Job whose re-creation the API server refuses (here an admission policy)
// is not deleted: nudge finds out by a dry run first, warns, and keeps
// trying. Nothing of it lives only in nudge's memory, so a restart in
// between changes nothing: once the policy is lifted the Job is re-created,
// exactly once.
func TestRefusedJobIsKeptAcrossARestart(t *testing.T) {
	recreate := func(o *options.Options) { o.RecreateJobs = true }
	e := setup(t, true, recreate)
	job := migrateJob(e.NS)
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), job)
	e.BaselinedObj(job)
	uids := e.jobUIDs("migrate")

	allow := e.refuseJobs()
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.G.Eventually(e.Events("migrate", record.ReasonJobNotRecreated)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("did not delete it"))), "a Warning that the Job is kept")
	e.Nudge.Stop(t)
	var kept batchv1.Job
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &kept)).To(Succeed(), "the Job kept")
	e.G.Expect(kept.UID).To(Equal(job.UID))
	e.G.Expect(kept.DeletionTimestamp).To(BeNil())

	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, recreate)
	allow()
	recreated := e.recreated(job)
	e.G.Consistently(uids).WithTimeout(3*time.Second).Should(Equal([]types.UID{job.UID, recreated.UID}), "one Job re-created, once")
	e.G.Expect(e.Events("migrate", record.ReasonRolled)()).To(HaveLen(1), "one rollout")
}

// A create that fails after nudge deleted the Job (here a policy that
// admits the dry run, as when admission changes between the two) is
// retried from memory: nudge warns, and creates the Job once it can.
func TestRecreatedJobSurvivesARefusedCreate(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RecreateJobs = true })
	job := migrateJob(e.NS)
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), job)
	e.BaselinedObj(job)
	uids := e.jobUIDs("migrate")

	allow := e.refuseJobsButDryRuns()
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.G.Eventually(e.Events("migrate", record.ReasonJobNotRecreated)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("could not create it yet"))), "a Warning that the Job is not re-created yet")
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound), "the old Job deleted")

	allow()
	recreated := e.recreated(job)
	e.G.Consistently(uids).WithTimeout(3*time.Second).Should(Equal([]types.UID{job.UID, recreated.UID}), "one Job re-created, once")
}

// refuseJobsButDryRuns makes the API server refuse every Job created in the
// test's namespace but by a dry run (as when admission changes between
// nudge's dry run and its create), and returns once it does. The func it
// returns lifts the refusal and returns once Jobs are accepted.
func (e *env) refuseJobsButDryRuns() (allow func()) {
	e.T.Helper()
	const message = "no Job may be created here but by a dry run (test)"
	return e.Refuse("refuse-jobs-"+e.NS, jobCreates(), "has(request.dryRun) && request.dryRun", message, func() error {
		probe := migrateJob(e.NS)
		probe.Name = "admission-probe"
		if err := suite.K8s.Create(e.Ctx, probe); err != nil {
			return err
		}
		return suite.K8s.Delete(e.Ctx, probe, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}

// recreated waits for nudge to create job again, and checks that the new
// Job carries the trigger and the applied state.
func (e *env) recreated(job *batchv1.Job) *batchv1.Job {
	e.T.Helper()
	var recreated batchv1.Job
	e.G.Eventually(func() (types.UID, error) {
		err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &recreated)
		return recreated.UID, err
	}).WithTimeout(60*time.Second).ShouldNot(Equal(job.UID), "nudge to create the Job once admission allows it")
	e.G.Expect(recreated.Spec.Template.Annotations).To(HaveKeyWithValue(workload.RestartedForAnnotation, "Secret "+e.NS+"/db"))
	e.G.Expect(recreated.Annotations).To(HaveKey(workload.AppliedAnnotation))
	e.G.Eventually(e.Events("migrate", record.ReasonRolled)).WithTimeout(10*time.Second).
		Should(ContainElement(HaveField("Regarding.UID", recreated.UID)), "a Rolled Event about the new Job")
	return &recreated
}

// jobUIDs returns the UIDs, in order, of the Jobs named name the
// namespace has had since it was called.
func (e *env) jobUIDs(name string) func() []types.UID {
	e.T.Helper()
	events := nt.Watch(e.T, suite.K8s, &batchv1.JobList{}, client.InNamespace(e.NS))
	var mu sync.Mutex
	var uids []types.UID
	go func() {
		for ev := range events {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || j.Name != name {
				continue
			}
			mu.Lock()
			if !slices.Contains(uids, j.UID) {
				uids = append(uids, j.UID)
			}
			mu.Unlock()
		}
	}()
	return func() []types.UID {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(uids)
	}
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
	e.T.Helper()
	return e.Refuse("refuse-jobs-"+e.NS, jobCreates(), "false", "no Job may be created here (test)", func() error {
		probe := migrateJob(e.NS)
		probe.Name = "admission-probe"
		return suite.K8s.Create(e.Ctx, probe, client.DryRunAll)
	})
}

// jobCreates is the admission rule of every create of a Job.
func jobCreates() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
	}
}

// A dry run refused for an exceeded Job quota does not keep the Job: its
// deletion releases what the new one needs. nudge deletes it, and creates
// the new one once the quota allows. (No quota controller runs here: the
// test sets the quota's usage itself.)
func TestJobQuotaDoesNotKeepTheJob(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RecreateJobs = true })
	job := migrateJob(e.NS)
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), job)
	e.BaselinedObj(job)
	uids := e.jobUIDs("migrate")

	jobs := corev1.ResourceName("count/jobs.batch")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "jobs"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{jobs: resource.MustParse("1")}}}
	e.Create(quota)
	use := func(n string) {
		e.T.Helper()
		e.G.Eventually(func() error {
			if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(quota), quota); err != nil {
				return err
			}
			quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{jobs: resource.MustParse(n)}}
			return suite.K8s.Status().Update(e.Ctx, quota)
		}).Should(Succeed(), "setting the quota's usage to %s", n)
	}
	use("1")
	probe := func() error {
		p := migrateJob(e.NS)
		p.Name = "quota-probe"
		return suite.K8s.Create(e.Ctx, p, client.DryRunAll)
	}
	e.G.Eventually(probe).WithTimeout(20*time.Second).Should(MatchError(ContainSubstring("exceeded quota")), "the quota to be enforced")

	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.G.Eventually(e.Events("migrate", record.ReasonJobNotRecreated)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("could not create it yet"))), "a Warning that the Job is not re-created yet")
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound), "the old Job deleted")

	use("0")
	recreated := e.recreated(job)
	e.G.Consistently(uids).WithTimeout(3*time.Second).Should(Equal([]types.UID{job.UID, recreated.UID}), "one Job re-created, once")
}
