package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// Labels the Job controller puts on a Job and its pod template; a re-created
// Job must not carry the old Job's.
var jobOwnLabels = []string{"controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"}

// pendingJob is a Job nudge deleted to re-create and has not created yet.
type pendingJob struct {
	job     *batchv1.Job // to create
	oldUID  types.UID    // of the deleted Job
	changed []refs.Source
}

// pendingJobs holds the Jobs nudge deleted and has not created again, so that
// a failed create (an admission policy, a quota, the API server unavailable)
// is retried by the next reconcile of that name instead of losing the Job. It
// lives in memory: a Job is still lost if nudge stops in between.
type pendingJobs struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]pendingJob
}

func (p *pendingJobs) get(key types.NamespacedName) (pendingJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.jobs[key]
	return j, ok
}

func (p *pendingJobs) put(key types.NamespacedName, j pendingJob) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs == nil {
		p.jobs = map[types.NamespacedName]pendingJob{}
	}
	p.jobs[key] = j
}

func (p *pendingJobs) drop(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.jobs, key)
}

// recreateJob deletes a Job and creates it again with the same spec (its
// pod template cannot change), carrying c's state and the trigger: Reloader's
// handling of Jobs, opt-in because it re-runs the Job.
func (r *Reconciler) recreateJob(ctx context.Context, old *batchv1.Job, c workload.Change, stamp string, changed []refs.Source) error {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   old.Namespace,
			Name:        old.Name,
			Labels:      maps.Clone(old.Labels),
			Annotations: maps.Clone(old.Annotations),
		},
		Spec: *old.Spec.DeepCopy(),
	}
	job.Spec.Selector, job.Spec.ManualSelector = nil, nil
	for _, l := range jobOwnLabels {
		delete(job.Labels, l)
		delete(job.Spec.Template.Labels, l)
	}
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	for k, v := range c.Labels {
		job.Labels[k] = *v
	}
	for k, v := range c.Annotations {
		job.Annotations[k] = *v
	}
	if job.Spec.Template.Annotations == nil {
		job.Spec.Template.Annotations = map[string]string{}
	}
	job.Spec.Template.Annotations[RestartedAtAnnotation] = stamp
	job.Spec.Template.Annotations[RestartedForAnnotation] = names(changed)

	err := r.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Job to re-create it: %w", err)
	}
	key := client.ObjectKeyFromObject(job)
	r.jobs.put(key, pendingJob{job: job, oldUID: old.UID, changed: changed})
	return r.createPendingJob(ctx, key)
}

// createPendingJob creates the pending Job of key, retrying briefly while
// the deleted one lingers, and records the rollout once it exists. On
// failure the Job stays pending, a Warning says so, and the error sends the
// name back to the workqueue.
func (r *Reconciler) createPendingJob(ctx context.Context, key types.NamespacedName) error {
	p, ok := r.jobs.get(key)
	if !ok {
		return nil
	}
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 8},
		func(ctx context.Context) (bool, error) {
			err := r.Client.Create(ctx, p.job.DeepCopy())
			switch {
			case err == nil:
				return true, nil
			case apierrors.IsAlreadyExists(err):
				return false, nil
			default:
				return false, err
			}
		})
	if err != nil {
		r.Metrics.rollFailed(key.Namespace)
		r.warn(ctx, p.job, []cause{{reason: ReasonJobNotRecreated, note: fmt.Sprintf(
			"Deleted Job %s to re-create it with the new content of %s, but could not create it yet (retrying): %v",
			key.Name, names(p.changed), err)}})
		return fmt.Errorf("re-creating Job: %w", err)
	}
	r.jobs.drop(key)
	r.rolled(ctx, p.job, p.changed)
	return nil
}

// pendingJobFirst handles a reconcile of a name whose Job nudge deleted and
// has not created again: when no Job of that name exists, it creates it;
// while the deleted one lingers, it looks again shortly. It reports whether
// it handled the request; once another Job of that name exists (nudge's, or
// one made meanwhile by someone else), it forgets the pending one and the
// reconcile goes on as usual.
func (r *Reconciler) pendingJobFirst(ctx context.Context, key types.NamespacedName, obj client.Object, getErr error) (bool, ctrl.Result, error) {
	p, ok := r.jobs.get(key)
	switch {
	case !ok:
		return false, ctrl.Result{}, nil
	case apierrors.IsNotFound(getErr):
		return true, ctrl.Result{}, r.createPendingJob(ctx, key)
	case getErr == nil && obj.GetUID() == p.oldUID:
		return true, ctrl.Result{RequeueAfter: 250 * time.Millisecond}, nil
	case getErr == nil:
		r.jobs.drop(key)
	}
	return false, ctrl.Result{}, nil
}

// startJob starts a Job from the CronJob's (just updated) job template at
// once, as `kubectl create job --from=cronjob/...` does.
func (r *Reconciler) startJob(ctx context.Context, cj *batchv1.CronJob) error {
	annotations := maps.Clone(cj.Spec.JobTemplate.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["cronjob.kubernetes.io/instantiate"] = "manual"
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    cj.Namespace,
			GenerateName: strings.TrimSuffix(truncate(cj.Name, 52), "-") + "-nudge-",
			Labels:       maps.Clone(cj.Spec.JobTemplate.Labels),
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	if err := r.Client.Create(ctx, job); err != nil {
		return fmt.Errorf("starting a Job from CronJob %s: %w", cj.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Started Job from CronJob", "job", job.Name)
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
