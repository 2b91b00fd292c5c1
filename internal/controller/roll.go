package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// release drops nudge's state from a workload that no longer opts in, so
// that opting in again is first sight (rule 3): a change made in between is
// baselined, not rolled. A workload without state costs no write.
func (r *Reconciler) release(ctx context.Context, obj client.Object) error {
	_, applied := obj.GetAnnotations()[workload.AppliedAnnotation]
	_, sealed := workload.Seal(obj)
	if !applied && !sealed {
		return nil
	}
	c := workload.Change{
		ResourceVersion: obj.GetResourceVersion(),
		Labels:          map[string]*string{workload.SealLabel: nil},
		Annotations: map[string]*string{workload.AppliedAnnotation: nil, workload.LastRolloutAnnotation: nil,
			workload.HeldAnnotation: nil, workload.RolloutsAnnotation: nil, eviction.ProgressAnnotation: nil},
	}
	if err := r.apply(ctx, obj, c); err != nil {
		return err
	}
	r.memory.History.Forget(client.ObjectKeyFromObject(obj))
	ctrl.LoggerFrom(ctx).V(1).Info("Dropped the state of a workload that opted out", "kind", r.Kind.Name())
	return nil
}

// apply writes c to obj. obj's metadata is updated from the response; its
// spec only where obj is read whole afterwards (see wholeAnswer): otherwise
// the API server answers with the metadata alone (PartialObjectMetadata, in
// protobuf), which is all the rest of a reconcile reads of obj after a
// write (its resourceVersion, annotations and seal), and obj keeps the spec
// it was read with: the API server encodes less.
func (r *Reconciler) apply(ctx context.Context, obj client.Object, c workload.Change) error {
	body, err := c.Patch(r.Kind)
	if err != nil {
		return err
	}
	if r.wholeAnswer() {
		err = r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(workload.FieldManager))
	} else {
		err = r.patchMetadata(ctx, obj, body)
	}
	if err != nil {
		return err
	}
	if r.Lull != nil {
		r.Lull.Wrote(time.Now())
	}
	return nil
}

// wholeAnswer reports whether a write must be answered with the whole
// workload: a CronJob a Job is started from after its rollout
// (CronJobStartJob), whose job template the Job copies from the patch's
// answer (the cache keeps a trimmed one).
func (r *Reconciler) wholeAnswer() bool {
	return r.CronJobStartJob && r.Kind == workload.CronJob
}

// patchMetadata sends the merge patch body for obj through r.Metadata to
// the kind's resource (controller-runtime's metadata client made a REST
// mapping per write, which allocated more than the whole answer's decoding:
// BenchmarkApplyAnswer), and sets on obj the metadata a write may change,
// as answered: resourceVersion, generation, labels (with nudge's seal),
// annotations, managedFields and selfLink (which drops the cache's seal
// mark, see workload.Seal).
func (r *Reconciler) patchMetadata(ctx context.Context, obj client.Object, body []byte) error {
	gvk, err := r.Client.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	meta, err := r.Metadata.Resource(gvk.GroupVersion().WithResource(r.Kind.Plural())).Namespace(obj.GetNamespace()).
		Patch(ctx, obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(meta.GetResourceVersion())
	obj.SetGeneration(meta.GetGeneration())
	obj.SetLabels(meta.GetLabels())
	obj.SetAnnotations(meta.GetAnnotations())
	obj.SetManagedFields(meta.GetManagedFields())
	obj.SetSelfLink(meta.GetSelfLink())
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
	endPace(obj, &c, d.Rolled)
	if r.Waves != nil {
		if err := r.Waves.Annotate(ctx, r.waveKey(client.ObjectKeyFromObject(obj)), c.Annotations, d, r.contentDigest); err != nil {
			return err
		}
	}
	if _, ok := obj.(*batchv1.Job); ok {
		// The cache holds a trimmed pod template: re-create from the API's.
		job := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), job); err != nil {
			return err
		}
		if job.ResourceVersion != obj.GetResourceVersion() {
			return apierrors.NewConflict(batchv1.Resource("jobs"), job.Name, errors.New("the Job changed since it was read"))
		}
		return r.Jobs.Recreate(ctx, jobReport{r}, job, c, stamp, d.Changed)
	}
	if err := r.trigger(ctx, obj, &c, d, now, stakater); err != nil {
		return err
	}
	// Pause with the trigger, unless already paused: by nudge (the period
	// runs) or by someone else (whose pause nudge must not end).
	if dep, ok := obj.(*appsv1.Deployment); ok && r.pausePeriod(obj) > 0 && !dep.Spec.Paused {
		if c.Spec == nil {
			c.Spec = map[string]any{}
		}
		c.Spec["paused"] = true
		c.Annotations[r.Dialect.Reloader().PausedAt] = ptr.To(now.UTC().Format(time.RFC3339))
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
			r.warn(ctx, obj, []record.Cause{{Reason: record.ReasonJobNotStarted, Note: err.Error()}})
		}
	}
	return nil
}

// trigger sets in c the write that makes obj's controller roll for d at
// now, as the kind and the options call for: Argo Rollouts' spec.restartAt
// (with Reloader's rollout-strategy restart, or a spec.workloadRef: the
// referenced Deployment is never written), Reloader's env var
// (EnvVars, written over the containers as the API holds them), or the
// pod-template annotations, with Reloader's last-reloaded-from when
// stakater. It returns the API server's error, and a conflict when obj
// changed since it was read.
func (r *Reconciler) trigger(ctx context.Context, obj client.Object, c *workload.Change, d rollout.Decision, now time.Time, stakater bool) error {
	stamp := now.UTC().Format(time.RFC3339Nano)
	switch {
	case r.Kind == workload.Rollout && (obj.GetAnnotations()[dialect.ReloaderRolloutStrategy] == "restart" || workload.Refers(r.Kind, obj)):
		c.Spec = map[string]any{"restartAt": now.UTC().Format(time.RFC3339)}
	case r.EnvVars && len(r.Kind.TemplatePath()) > 0:
		// The cache holds trimmed containers: the whole list comes from the
		// API, and the write is guarded by the version read there.
		live := r.Kind.New()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		if live.GetResourceVersion() != obj.GetResourceVersion() {
			return apierrors.NewConflict(schema.GroupResource{Resource: r.Kind.Plural()}, obj.GetName(), errors.New("the workload changed since it was read"))
		}
		spec := &r.Kind.Template(live).Spec
		containers := spec.Containers
		for _, src := range d.Changed {
			containers = workload.SetEnv(containers, workload.ContainerFor(spec, src), workload.EnvVarName(src), d.Write.Entries[src].Digest)
		}
		c.Containers = containers
	default:
		c.TemplateAnnotations = map[string]string{workload.RestartedAtAnnotation: stamp, workload.RestartedForAnnotation: refs.Names(d.Changed)}
		if a := r.Kind.TriggerAnnotation(); a != "" {
			c.TemplateAnnotations[a] = stamp
		}
		if stakater && len(r.Kind.TemplatePath()) > 0 && len(d.Changed) > 0 {
			c.TemplateAnnotations[workload.LastReloadedFromAnnotation] = r.lastReloadedFrom(obj, d, now)
		}
	}
	return nil
}

// lastReloadedFrom returns Reloader's last-reloaded-from for the rollout of
// d at now (see workload.ReloadSource): of the sources changed, the last,
// as Reloader keeps only the last; its keyed digest, never an unkeyed one;
// the container that uses it, found in obj's pod template as the cache
// keeps it (see retained.Workload), so at no cost of a request.
func (r *Reconciler) lastReloadedFrom(obj client.Object, d rollout.Decision, now time.Time) string {
	src := d.Changed[len(d.Changed)-1]
	var container string
	if t := r.Kind.Template(obj); t != nil && len(t.Spec.Containers) > 0 {
		container = t.Spec.Containers[workload.ContainerFor(&t.Spec, src)].Name
	}
	return workload.NewReloadSource(src, d.Write.Entries[src].Digest, container, now).String()
}

// pausePeriod returns a Deployment's pause period, 0 when unset or invalid
// (Parse reports the annotation).
func (r *Reconciler) pausePeriod(obj client.Object) time.Duration {
	d, err := time.ParseDuration(obj.GetAnnotations()[r.Dialect.Reloader().PausePeriod])
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// resume ends a pause nudge started once its period has passed, or asks to
// be called back when it will have; result is returned otherwise unchanged.
// The pause lives in annotations, so a restarted nudge resumes on time.
func (r *Reconciler) resume(ctx context.Context, obj client.Object, result ctrl.Result) (ctrl.Result, error) {
	pausedAt := r.Dialect.Reloader().PausedAt
	at, err := time.Parse(time.RFC3339, obj.GetAnnotations()[pausedAt])
	if r.Kind != workload.Deployment || err != nil {
		return result, nil
	}
	left := at.Add(r.pausePeriod(obj)).Sub(r.now())
	if left > 0 {
		if result.RequeueAfter == 0 || left < result.RequeueAfter {
			result.RequeueAfter = left
		}
		return result, nil
	}
	c := workload.Change{
		ResourceVersion: obj.GetResourceVersion(),
		Annotations:     map[string]*string{pausedAt: nil},
		Spec:            map[string]any{"paused": false},
	}
	if err := r.apply(ctx, obj, c); err != nil {
		return r.retry(ctx, err)
	}
	ctrl.LoggerFrom(ctx).Info("Resumed Deployment after its pause period", "pausedAt", at)
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
