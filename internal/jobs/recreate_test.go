package jobs

import (
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// TestNewJob: the Job that replaces another keeps its spec, labels and
// annotations, loses what the Job controller set (selector, its labels),
// and carries nudge's state and the trigger.
func TestNewJob(t *testing.T) {
	g := NewWithT(t)
	old := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "migrate", UID: "u1", ResourceVersion: "7",
			Labels:      map[string]string{"app": "shop", "job-name": "migrate", "batch.kubernetes.io/controller-uid": "u1"},
			Annotations: map[string]string{"team": "a"}},
		Spec: batchv1.JobSpec{
			BackoffLimit:   ptr.To[int32](2),
			ManualSelector: ptr.To(false),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop", "controller-uid": "u1", "batch.kubernetes.io/job-name": "migrate"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "m", Image: "i"}}},
			},
		},
	}
	state, seal := "v1.k ConfigMap/app=d", "s"
	c := workload.Change{
		Labels:      map[string]*string{workload.SealLabel: &seal},
		Annotations: map[string]*string{workload.AppliedAnnotation: &state},
	}
	changed := []refs.Source{{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}}
	before := old.DeepCopy()

	job := newJob(old, c, "2026-11-25T12:00:00Z", changed)

	g.Expect(old).To(Equal(before), "the old Job is left alone")
	g.Expect(job.Name).To(Equal("migrate"))
	g.Expect(job.UID).To(BeEmpty())
	g.Expect(job.ResourceVersion).To(BeEmpty())
	g.Expect(job.Spec.Selector).To(BeNil(), "the Job controller sets a new one")
	g.Expect(job.Spec.ManualSelector).To(BeNil())
	g.Expect(job.Spec.BackoffLimit).To(HaveValue(BeEquivalentTo(2)))
	g.Expect(job.Labels).To(Equal(map[string]string{"app": "shop", workload.SealLabel: "s"}))
	g.Expect(job.Annotations).To(Equal(map[string]string{"team": "a", workload.AppliedAnnotation: state}))
	g.Expect(job.Spec.Template.Labels).To(Equal(map[string]string{"app": "shop"}))
	g.Expect(job.Spec.Template.Annotations).To(Equal(map[string]string{
		workload.RestartedAtAnnotation:  "2026-11-25T12:00:00Z",
		workload.RestartedForAnnotation: "ConfigMap shop/app",
	}))
}

// TestRefusal: a refusal is new once per note, and forgetting it makes the
// same note new again.
func TestRefusal(t *testing.T) {
	g := NewWithT(t)
	var p pendingJobs
	key := types.NamespacedName{Namespace: "shop", Name: "migrate"}
	g.Expect(p.refusal(key, "denied")).To(BeTrue(), "the first refusal")
	g.Expect(p.refusal(key, "denied")).To(BeFalse(), "the same refusal again")
	g.Expect(p.refusal(key, "quota")).To(BeTrue(), "another refusal")
	g.Expect(p.refusal(key, "")).To(BeTrue(), "forgotten")
	g.Expect(p.refusal(key, "")).To(BeFalse(), "nothing to forget")
	g.Expect(p.refusal(key, "quota")).To(BeTrue(), "new again once forgotten")
}

// TestJournalKey: a Job's data key in the journal, namespace and name
// joined by a dot (a namespace holds none), read back by load.
func TestJournalKey(t *testing.T) {
	NewWithT(t).Expect(journalKey(types.NamespacedName{Namespace: "shop", Name: "db.migrate"})).To(Equal("shop.db.migrate"))
}
