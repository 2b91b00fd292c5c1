package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
)

func recreateJobs(o *options.Options) { o.RecreateJobs = true }

// journalSecret is the name of nudge's Job journal with the default options.
func journalSecret() string {
	o := options.Default()
	return o.JobJournalSecret()
}

// journal returns the data of nudge's Job journal in the test's namespace
// (nudge's own there), nil when it has none.
func (e *env) journal() map[string][]byte {
	var s corev1.Secret
	err := suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: journalSecret()}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.G.Expect(err).NotTo(HaveOccurred())
	return s.Data
}

// A nudge stopped after it deleted a Job and before it could create it again
// (here the create is refused past the dry run, as when admission changes in
// between, and nudge is stopped while it retries) leaves the Job in its
// journal: the next nudge creates it, once, and clears the entry. Without
// the journal the Job would be lost: no Job of that name is left to
// reconcile.
func TestDeletedJobIsCreatedAfterARestart(t *testing.T) {
	e := setup(t, true, recreateJobs)
	job := migrateJob(e.NS)
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), job)
	e.BaselinedObj(job)
	uids := e.jobUIDs("migrate")
	entry := e.NS + ".migrate"

	allow := e.refuseJobsButDryRuns()
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })
	e.G.Eventually(e.Events("migrate", record.ReasonJobNotRecreated)).WithTimeout(20*time.Second).
		Should(ContainElement(HaveField("Note", ContainSubstring("could not create it yet"))), "a Warning that the Job is not re-created yet")
	e.Nudge.Stop(t)
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})).To(Satisfy(apierrors.IsNotFound), "the old Job deleted")
	e.G.Expect(e.journal()).To(HaveKey(entry), "the Job to create in the journal")
	e.G.Expect(string(e.journal()[entry])).NotTo(ContainSubstring("p2"), "the journal holds no source content")

	allow()
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, recreateJobs)
	recreated := e.recreated(job)
	e.G.Eventually(e.journal).WithTimeout(10*time.Second).ShouldNot(HaveKey(entry), "the entry cleared once the Job exists")
	e.G.Consistently(uids).WithTimeout(3*time.Second).Should(Equal([]types.UID{job.UID, recreated.UID}), "one Job re-created, once")
	e.G.Expect(e.Events("migrate", record.ReasonRolled)()).To(HaveLen(1), "one rollout")
}

// Entries a stopped nudge left that no longer hold: one written before a
// delete that never happened (its Job stands, with its old state: the next
// nudge decides afresh and rolls it once for the change it missed), and one
// whose Job was created before the entry was cleared (nothing to do). Both
// are cleared; no Job is created twice.
func TestStaleJobJournalEntries(t *testing.T) {
	e := setup(t, true, recreateJobs)
	undeleted, created := migrateJob(e.NS), migrateJob(e.NS)
	created.Name = "seed"
	created.Spec.Template = nt.Template("batch", nt.EnvFrom("Secret", "other")) // unchanged here
	created.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	e.Create(nt.Secret(e.NS, "db", map[string]string{"password": "p1"}), nt.Secret(e.NS, "other", map[string]string{"k": "v"}),
		undeleted, created)
	e.BaselinedObj(undeleted)
	e.BaselinedObj(created)
	e.Nudge.Stop(t)
	uids, seedUIDs := e.jobUIDs("migrate"), e.jobUIDs("seed")

	// The journal as a nudge stopped at those two points leaves it (the
	// format of jobs.Journal: "namespace.name" → JSON).
	entry := func(j *batchv1.Job, oldUID types.UID) []byte {
		next := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name, Annotations: j.Annotations},
			Spec: *j.Spec.DeepCopy()}
		next.Spec.Selector = nil
		b, err := json.Marshal(map[string]any{"job": next, "oldUID": oldUID,
			"changed": []map[string]string{{"Kind": "Secret", "Namespace": e.NS, "Name": "db"}}})
		e.G.Expect(err).NotTo(HaveOccurred())
		return b
	}
	e.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: journalSecret()},
		Data: map[string][]byte{
			e.NS + ".migrate": entry(undeleted, undeleted.UID),
			e.NS + ".seed":    entry(created, "uid-of-a-job-deleted-before"),
		}})
	e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("p2") })

	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, recreateJobs)
	recreated := e.recreated(undeleted)
	e.G.Eventually(e.journal).WithTimeout(10*time.Second).Should(BeEmpty(), "both entries cleared")
	e.G.Consistently(uids).WithTimeout(3*time.Second).Should(Equal([]types.UID{undeleted.UID, recreated.UID}),
		"the Job whose delete never happened re-created once, for the change nudge missed")
	e.G.Expect(e.Events("migrate", record.ReasonRolled)()).To(HaveLen(1), "one rollout")
	e.G.Expect(seedUIDs()).To(Equal([]types.UID{created.UID}), "the Job created before the stop is the same Job")
}
