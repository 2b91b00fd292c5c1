package jobs

import (
	"context"
	"errors"
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
	// journaled: read from the Journal at start, so the delete may not
	// have happened (nudge stopped between the record and the delete).
	journaled bool
}

// pendingJobs holds the Jobs nudge deleted and has not created again, so that
// a create that fails after the delete (the API server unavailable, a quota
// not yet released, an admission that changed since the dry run, see
// Recreate) is retried by the next reconcile of that name instead of
// losing the Job. The Journal keeps the same entries across a stop of
// nudge; this is their copy in memory, read at every reconcile. A create the
// API server refuses is found out by a dry run before the delete, and the
// Job, kept, still holds its applied state, so a restarted nudge takes the
// same decision again. It also remembers the last refusal warned about per
// Job, so that the retries of a refused re-creation warn once.
type pendingJobs struct {
	mu      sync.Mutex
	jobs    map[types.NamespacedName]pendingJob
	refused map[types.NamespacedName]string
}

// refusal records note as the refusal of key's re-creation, "" for none,
// and reports whether it differs from the last one recorded.
func (p *pendingJobs) refusal(key types.NamespacedName, note string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refused[key] == note {
		return false
	}
	if note == "" {
		delete(p.refused, key)
		return true
	}
	if p.refused == nil {
		p.refused = map[types.NamespacedName]string{}
	}
	p.refused[key] = note
	return true
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

// Reporter is told what becomes of the Jobs a Recreator re-creates.
type Reporter interface {
	// Rolled: job was created again for the changed sources.
	Rolled(ctx context.Context, job client.Object, changed []refs.Source)
	// NotRecreated: job could not be re-created now, a failed rollout;
	// warning, when not "", is a Warning (JobNotRecreated) to record: a
	// cause not recorded before.
	NotRecreated(ctx context.Context, job client.Object, warning string)
}

// Recreator re-creates Jobs (--recreate-jobs), so that a Job whose sources
// changed runs again with them: Reloader's handling of Jobs. The zero
// value, with Client set, keeps the Jobs deleted and not created yet in
// memory only. It is safe for concurrent use.
type Recreator struct {
	// Client reads from the cache and writes to the API.
	Client client.Client
	// Reader reads from the API directly: the cache holds a Job's pod
	// template trimmed, and a Job is re-created from the API's.
	Reader client.Reader
	// Journal, when not nil, keeps the Jobs deleted and not created yet
	// across a stop of nudge.
	Journal *Journal

	jobs pendingJobs
}

// Recreate deletes a Job and creates it again with the same spec (its
// pod template cannot change), carrying c's state and the trigger: Reloader's
// handling of Jobs, opt-in because it re-runs the Job.
//
// It first asks the API server, by a dry run, whether it would create the
// new Job. One it refuses (an admission policy, an invalid spec) is not
// deleted: a Warning says so, and the error sends the Job back to the
// workqueue, to be tried again until it is admitted. The Job keeps its
// applied state, so a restarted nudge takes the same decision: nothing is
// lost, and the memory of the refusal is the Job itself. A dry run of the
// Job's own name that fails only because that name is taken (by the Job to
// delete) passed admission, which comes first. A refusal for an exceeded
// quota is not trusted: deleting the old Job may release what the new one
// needs (count/jobs.batch), so nudge deletes and creates as before.
//
// Between the delete and the create the new Job lives in r.Journal, so that
// a stop of nudge in between loses nothing (see Journal); a Job the
// journal cannot take is kept, as a refused one is.
//
// The Job is read from the API server (r.Reader): a conflict is returned
// when it is no longer the version cached was.
func (r *Recreator) Recreate(ctx context.Context, rep Reporter, cached client.Object, c workload.Change, stamp string, changed []refs.Source) error {
	old := &batchv1.Job{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(cached), old); err != nil {
		return err
	}
	if old.ResourceVersion != cached.GetResourceVersion() {
		return apierrors.NewConflict(batchv1.Resource("jobs"), old.Name, errors.New("the Job changed since it was read"))
	}
	job := newJob(old, c, stamp, changed)
	key := client.ObjectKeyFromObject(job)
	if err := r.admitted(ctx, job); err != nil {
		return r.keptJob(ctx, rep, old, err, "Kept Job %s: the API server refuses to create it again with the new content of %s, so nudge did not delete it (retrying): %v",
			key.Name, refs.Names(changed), err)
	}
	p := pendingJob{job: job, oldUID: old.UID, changed: changed}
	if err := r.Journal.record(ctx, key, p); err != nil {
		return r.keptJob(ctx, rep, old, err, "Kept Job %s: nudge could not record it in its Job journal before deleting it (retrying): %v",
			key.Name, err)
	}
	r.jobs.refusal(key, "")

	err := r.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		if cerr := r.forgetPendingJob(ctx, key); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("deleting Job to re-create it: %w", err)
	}
	r.jobs.put(key, p)
	return r.createPendingJob(ctx, rep, key)
}

// forgetPendingJob drops the pending Job of key from the journal, then from
// memory. When the journal cannot be written it keeps the Job in memory and
// returns the error: the next reconcile of key (see Pending) clears
// it then, so that no stale entry outlives nudge to re-create a Job someone
// deleted since.
func (r *Recreator) forgetPendingJob(ctx context.Context, key types.NamespacedName) error {
	if err := r.Journal.clear(ctx, key); err != nil {
		return err
	}
	r.jobs.drop(key)
	return nil
}

// keptJob tells rep that old is kept instead of re-created, for err, with
// the note format makes of args (see failed); it returns err wrapped, to
// retry.
func (r *Recreator) keptJob(ctx context.Context, rep Reporter, old *batchv1.Job, err error, format string, args ...any) error {
	r.failed(ctx, rep, old, fmt.Sprintf(format, args...))
	return fmt.Errorf("re-creating Job: %w", err)
}

// failed tells rep that job was not re-created, with note as its Warning
// unless that was the last one told of job (see pendingJobs.refusal).
func (r *Recreator) failed(ctx context.Context, rep Reporter, job *batchv1.Job, note string) {
	if !r.jobs.refusal(client.ObjectKeyFromObject(job), note) {
		note = ""
	}
	rep.NotRecreated(ctx, job, note)
}

// admitted returns nil when the API server would create job, as far as a
// dry run can tell, and its refusal otherwise (see Recreate).
func (r *Recreator) admitted(ctx context.Context, job *batchv1.Job) error {
	err := r.Client.Create(ctx, job.DeepCopy(), client.DryRunAll, client.FieldOwner(workload.FieldManager))
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		return nil
	}
	return err
}

// newJob returns the Job that replaces old: its spec, without the selector
// and the labels the Job controller set, with c's state and the trigger.
func newJob(old *batchv1.Job, c workload.Change, stamp string, changed []refs.Source) *batchv1.Job {
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
	job.Spec.Template.Annotations[workload.RestartedAtAnnotation] = stamp
	job.Spec.Template.Annotations[workload.RestartedForAnnotation] = refs.Names(changed)
	return job
}

// createPendingJob creates the pending Job of key, retrying briefly while
// the deleted one lingers, and records the rollout once it exists. On
// failure the Job stays pending, a Warning says so, and the error sends the
// name back to the workqueue.
func (r *Recreator) createPendingJob(ctx context.Context, rep Reporter, key types.NamespacedName) error {
	p, ok := r.jobs.get(key)
	if !ok {
		return nil
	}
	created := p.job.DeepCopy() // given its UID by the create, for the Event
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 8},
		func(ctx context.Context) (bool, error) {
			j := p.job.DeepCopy()
			err := r.Client.Create(ctx, j, client.FieldOwner(workload.FieldManager))
			switch {
			case err == nil:
				created = j
				return true, nil
			case apierrors.IsAlreadyExists(err):
				return false, nil
			default:
				return false, err
			}
		})
	if err != nil {
		r.failed(ctx, rep, p.job, fmt.Sprintf(
			"Deleted Job %s to re-create it with the new content of %s, but could not create it yet (retrying): %v",
			key.Name, refs.Names(p.changed), err))
		return fmt.Errorf("re-creating Job: %w", err)
	}
	r.jobs.refusal(key, "")
	rep.Rolled(ctx, created, p.changed)
	return r.forgetPendingJob(ctx, key)
}

// Step is what a Job nudge deleted and has not created again asks of a
// reconcile of its name (see Pending).
type Step int

const (
	// Proceed: no Job of that name is pending; the reconcile goes on as
	// usual.
	Proceed Step = iota
	// Create: no Job of that name exists: create the pending one, and do
	// nothing else.
	Create
	// Linger: the deleted Job lingers: look again shortly, and do nothing
	// else.
	Linger
	// Forget: another Job of that name exists (nudge's, or one made
	// meanwhile by someone else): forget the pending one, then go on as
	// usual.
	Forget
)

// Pending returns what a reconcile of key, whose Get returned obj and
// getErr, must do for a Job nudge deleted and has not created again (see
// Carry). A Job read from the journal whose old Job stands undeleted asks
// Forget: nudge stopped before the delete, and the reconcile decides
// afresh. A name without a Job forgets its refusal. It makes no request.
func (r *Recreator) Pending(key types.NamespacedName, obj client.Object, getErr error) Step {
	if r == nil {
		return Proceed
	}
	p, ok := r.jobs.get(key)
	switch {
	case !ok:
		if apierrors.IsNotFound(getErr) {
			r.jobs.refusal(key, "")
		}
		return Proceed
	case apierrors.IsNotFound(getErr):
		return Create
	case getErr == nil && obj.GetUID() == p.oldUID && !(p.journaled && obj.GetDeletionTimestamp() == nil):
		return Linger
	case getErr == nil:
		return Forget
	}
	return Proceed
}

// Carry does what step asks for key (see Pending): creates the pending Job
// (Create), asks to be called back shortly (Linger), or forgets the pending
// Job in the journal and in memory (Forget). It returns the API server's
// error.
func (r *Recreator) Carry(ctx context.Context, rep Reporter, key types.NamespacedName, step Step) (ctrl.Result, error) {
	switch step {
	case Create:
		return ctrl.Result{}, r.createPendingJob(ctx, rep, key)
	case Linger:
		return ctrl.Result{RequeueAfter: 250 * time.Millisecond}, nil
	case Forget:
		return ctrl.Result{}, r.forgetPendingJob(ctx, key)
	}
	return ctrl.Result{}, nil
}

// StartFromCronJob starts a Job from the CronJob's (just updated) job
// template at once, as `kubectl create job --from=cronjob/...` does
// (Reloader's --cronjob-start-job). It returns the API server's error.
func StartFromCronJob(ctx context.Context, c client.Client, cj *batchv1.CronJob) error {
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
	if err := c.Create(ctx, job); err != nil {
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
