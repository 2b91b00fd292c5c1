package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/jobs"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// stateChange is the write of an applied state (formatted, see
// fingerprint.State.Format) and its seal, nothing else.
func (r *Reconciler) stateChange(obj client.Object, value string) workload.Change {
	return workload.Change{
		ResourceVersion: obj.GetResourceVersion(),
		Labels:          map[string]*string{workload.SealLabel: ptr.To(r.Key.Seal(value))},
		Annotations:     map[string]*string{workload.AppliedAnnotation: &value},
	}
}

// release drops nudge's state from a workload that no longer opts in (see
// workload.Release): opting in again is then first sight (rule 3).
func (r *Reconciler) release(ctx context.Context, obj client.Object) error {
	c, ok := workload.Release(obj)
	if !ok {
		return nil
	}
	if err := r.apply(ctx, obj, c); err != nil {
		return err
	}
	r.memory.History.Forget(client.ObjectKeyFromObject(obj))
	ctrl.LoggerFrom(ctx).V(1).Info("Dropped the state of a workload that opted out", "kind", r.Kind.Name())
	return nil
}

// apply writes c to obj (see workload.Writer.Apply), answered whole only
// for a CronJob a Job is started from after its rollout (CronJobStartJob),
// whose job template the Job copies from the answer (the cache keeps a
// trimmed one), and tells Lull.
func (r *Reconciler) apply(ctx context.Context, obj client.Object, c workload.Change) error {
	whole := r.CronJobStartJob && r.Kind == workload.CronJob
	if err := (workload.Writer{Client: r.Client, Metadata: r.Metadata}).Apply(ctx, r.Kind, obj, c, whole); err != nil {
		return err
	}
	if r.Lull != nil {
		r.Lull.Wrote(time.Now())
	}
	return nil
}

// roll writes the trigger and the new applied state (d.Write, formatted) in
// one patch, in the way the kind and the options call for, then records the
// rollout. With stakater (Reloader's annotations select obj) and the
// default trigger, the patch also writes Reloader's last-reloaded-from on
// the pod template, as Reloader's annotations strategy does (with its
// env-vars strategy Reloader writes none).
func (r *Reconciler) roll(ctx context.Context, obj client.Object, d rollout.Decision, applied string, now time.Time, stakater bool) error {
	stamp := now.UTC().Format(time.RFC3339Nano)
	c := r.stateChange(obj, applied)
	if r.NotifyOnly {
		if err := r.apply(ctx, obj, c); err != nil {
			return err
		}
		r.notify(obj, d.Changed)
		ctrl.LoggerFrom(ctx).Info("Sent change to the webhook instead of rolling", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed))
		return nil
	}
	c.Annotations[workload.LastRolloutAnnotation] = &stamp
	if d.Restarts {
		// The pods that started before now are evicted next (Evict).
		c.Annotations[eviction.ProgressAnnotation] = ptr.To(eviction.Progress{Since: now}.String())
	}
	c.EndHold(obj.GetAnnotations(), d.Rolled)
	if err := r.waveAnnotate(ctx, obj, c.Annotations, d); err != nil {
		return err
	}
	if r.Kind == workload.Job {
		return r.Jobs.Recreate(ctx, jobReport{r}, obj, c, stamp, d.Changed)
	}
	if err := r.trigger(ctx, obj, &c, d, now, stakater); err != nil {
		return err
	}
	if r.Kind == workload.Deployment {
		r.pausePeriod().Pause(&c, obj, now)
	}
	if err := r.apply(ctx, obj, c); err != nil {
		if !apierrors.IsConflict(err) {
			r.Metrics.RollFailed(r.Kind.Name(), obj.GetNamespace())
			if r.ReloaderEvents && !apierrors.IsNotFound(err) {
				r.record(ctx, obj, record.Cause{Reason: record.ReasonReloadFail, Note: record.Note(fmt.Sprintf(
					"Update for '%s' of type '%s' in namespace '%s' failed with error %v", obj.GetName(), r.Kind.Name(), obj.GetNamespace(), err))})
			}
		}
		return err
	}
	r.rolled(ctx, obj, d.Changed)
	if cj, ok := obj.(*batchv1.CronJob); ok && r.CronJobStartJob {
		// The rollout is written: a retry would not start the Job again, so
		// a failure is reported, not retried.
		if err := jobs.StartFromCronJob(ctx, r.Client, cj); err != nil {
			r.record(ctx, obj, record.Cause{Reason: record.ReasonJobNotStarted, Note: record.Note(err.Error())})
		}
	}
	return nil
}

// trigger sets in c the write that makes obj's controller roll for d at
// now (see workload.Trigger), reading the workload from the API server when
// the trigger needs it whole. It returns the API server's error, and a
// conflict when obj changed since it was read.
func (r *Reconciler) trigger(ctx context.Context, obj client.Object, c *workload.Change, d rollout.Decision, now time.Time, stakater bool) error {
	t := workload.Trigger{Changed: d.Changed, Digest: func(src refs.Source) string { return d.Write.Entries[src].Digest }, Now: now,
		RestartAt: r.Kind == workload.Rollout && (obj.GetAnnotations()[dialect.ReloaderRolloutStrategy] == "restart" || workload.Refers(r.Kind, obj)),
		EnvVars:   r.EnvVars, Stakater: stakater}
	live := obj
	if t.Live(r.Kind) {
		live = r.Kind.New()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		if live.GetResourceVersion() != obj.GetResourceVersion() {
			return apierrors.NewConflict(schema.GroupResource{Resource: r.Kind.Plural()}, obj.GetName(), errors.New("the workload changed since it was read"))
		}
	}
	t.Set(c, r.Kind, obj, live)
	return nil
}

// pausePeriod is Reloader's pause of a Deployment, by the names of its
// annotations as the flags set them.
func (r *Reconciler) pausePeriod() workload.PausePeriod {
	names := r.Dialect.Reloader()
	return workload.PausePeriod{Period: names.PausePeriod, PausedAt: names.PausedAt}
}

// resume ends a Deployment's pause a rollout started once its period has
// passed, or asks to be called back when it will have; result is returned
// otherwise unchanged.
func (r *Reconciler) resume(ctx context.Context, obj client.Object, result ctrl.Result) (ctrl.Result, error) {
	if r.Kind != workload.Deployment {
		return result, nil
	}
	c, left, due := r.pausePeriod().Resume(obj, r.now())
	if !due {
		return sooner(result, left), nil
	}
	if err := r.apply(ctx, obj, c); err != nil {
		return r.retry(ctx, err)
	}
	ctrl.LoggerFrom(ctx).Info("Resumed Deployment after its pause period")
	return result, nil
}

// jobReport tells the reconciler what became of the Jobs its Recreator
// re-creates (see jobs.Reporter).
type jobReport struct{ r *Reconciler }

func (j jobReport) Rolled(ctx context.Context, job client.Object, changed []refs.Source) {
	j.r.rolled(ctx, job, changed)
}

func (j jobReport) NotRecreated(ctx context.Context, job client.Object, warning string) {
	j.r.Metrics.RollFailed(j.r.Kind.Name(), job.GetNamespace())
	if warning != "" {
		j.r.record(ctx, job, record.Cause{Reason: record.ReasonJobNotRecreated, Note: record.Note(warning)})
	}
}
