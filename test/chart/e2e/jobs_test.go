package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// recreateJobs=true: with the chart's permissions alone, nudge re-creates a
// Job whose ConfigMap changed, recording it in its Job journal (a Secret of
// the release namespace) between the delete and the create, and clearing
// it after.
func TestRecreateJobsInstall(t *testing.T) {
	g := NewWithT(t)
	ns, apps := namespace(t, "chart-jobs-"), namespace(t, "chart-batch-")
	rel := install(t, "nudge-jobs", ns, charttest.Values{"recreateJobs": true})
	n := start(t, rel)

	g.Expect(k8s.Create(t.Context(), nt.ConfigMap(apps, "migrate", map[string]string{"STEP": "1"}))).To(Succeed())
	tmpl := nt.Template("migrate", nt.EnvFrom("ConfigMap", "migrate"), restricted)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: "migrate", Annotations: auto},
		Spec: batchv1.JobSpec{Template: tmpl, BackoffLimit: ptr.To[int32](0)}}
	g.Expect(k8s.Create(t.Context(), job)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(job), job)).To(Succeed())
		return job.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of the Job")
	old := job.UID

	changeConfigMap(t, apps, "migrate")
	g.Eventually(func() (types.UID, error) {
		var j batchv1.Job
		err := k8s.Get(t.Context(), client.ObjectKeyFromObject(job), &j)
		return j.UID, err
	}).WithTimeout(30*time.Second).ShouldNot(Equal(old), "the Job re-created")
	// The entry is cleared just after the create: wait for it.
	g.Eventually(func(g Gomega) map[string][]byte {
		var journal corev1.Secret
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "nudge-fingerprint-key-jobs"}, &journal)).
			To(Succeed(), "the Job journal in the release namespace")
		return journal.Data
	}).WithTimeout(10*time.Second).Should(BeEmpty(), "its entry cleared once the Job was created")

	n.stop(t)
	n.expectNoForbidden(t)
	requestsOf(t, rel.user())
}
