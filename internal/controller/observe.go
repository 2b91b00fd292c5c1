package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/jobs"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// observed is what a reconcile read of one opted-in workload from the
// cache, for the decision.
type observed struct {
	key  types.NamespacedName
	obj  client.Object
	spec dialect.Spec
	// in is rollout.Decide's input (see inputs).
	in rollout.Input
	// causes are the Warnings found on the way: malformed annotations,
	// missing sources, unwatched namespaces, refused references and
	// overrides.
	causes []record.Cause
	// lateProducers are the counted Secrets whose producer was still not
	// ready at the gate's timeout: a rollout for one says so (see
	// resolve.ProducerWarning).
	lateProducers []resolve.Resolved
	// contest is the Warning of a contested takeover, for a Contested
	// decision (see rollout.Input.Contested).
	contest record.Cause
	// job is what a Job nudge deleted and has not created again asks (see
	// jobs.Recreator.Pending): Create and Linger leave nothing to decide,
	// and obj is then nil.
	job jobs.Step
	// optedOut says that the workload does not opt in, leaving nothing to
	// decide: act drops nudge's state from it (see release), unless an
	// annotation is malformed: a malformed annotation may be a mistyped
	// opt-in, so the state is kept, and once it is mended a change made
	// meanwhile still rolls.
	optedOut, malformed bool
	// unfinished says that a restart of its pods through the Eviction API
	// is unfinished (see eviction.Observed).
	unfinished bool
	// guarded says that act's guard deferred the rollout decided (see
	// guard): nothing was written, and the waves keep what they held.
	guarded bool
	// acted are the Warnings act found (a restart's, see restartReport),
	// recorded with the decision's.
	acted []record.Cause
	// unread says that the pod template named by the workload's
	// spec.workloadRef could not be read (see unreferenced), leaving
	// nothing to decide or act on, and causes to record.
	unread bool
}

// decides reports whether o leaves a decision to take.
func (o *observed) decides() bool {
	return !o.optedOut && !o.unread && o.job != jobs.Create && o.job != jobs.Linger
}

// A source created just before its workload may reach nudge's cache after
// the workload does: the cache then misses a source the API server has.
// Before it warns that such a source does not exist, the reconciler asks the
// API server, and while the cache is behind it waits (behindWait, at most
// memo.Lag's limit of times in a row) instead of acting.
const behindWait = 250 * time.Millisecond

// staleWait is how long a reconcile that read a version nudge has written
// over waits when the write's event has come meanwhile: the cache holds the
// write once its event is handled, so a moment.
const staleWait = 10 * time.Millisecond

// errCacheBehind is returned by inputs when the cache misses a source the
// API server has.
var errCacheBehind = errors.New("the cache is behind the API server")

// observe reads the workload key and its sources from the cache, and from
// the API server what the cache may be behind on; it writes nothing. It
// returns nil, with the reconcile's result, when there is nothing to act
// on: the workload is gone (what is remembered of it is forgotten), has no
// pod template, is in a namespace not watched, was read from a cache behind
// nudge's own write, or reads a source the cache misses.
func (r *Reconciler) observe(ctx context.Context, key types.NamespacedName) (*observed, ctrl.Result, error) {
	obj := r.Kind.New()
	err := r.Client.Get(ctx, key, obj)
	step := r.Jobs.Pending(key, obj, err)
	switch {
	case step == jobs.Create || step == jobs.Linger:
		return &observed{key: key, job: step}, ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		r.memory.Forget(key)
		r.lag.Forget(key)
		r.waveSaw(ctx, key, nil)
		return nil, ctrl.Result{}, nil
	case err != nil:
		return nil, ctrl.Result{}, err
	}
	r.waveSaw(ctx, key, obj)
	tmpl, err := workload.TemplateOf(ctx, r.Client, r.Kind, obj)
	if tmpl == nil || !r.watched(ctx, obj.GetNamespace()) {
		causes, err := r.unreferenced(obj, err)
		if len(causes) == 0 {
			return nil, ctrl.Result{}, err
		}
		return &observed{key: key, obj: obj, causes: causes, job: step, unread: true}, ctrl.Result{}, nil
	}
	o := &observed{key: key, obj: obj, job: step}
	var errs []error
	o.spec, errs = r.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
	o.causes = r.malformed(obj, errs)
	if !o.spec.Enabled(r.AutoReloadAll) {
		o.optedOut, o.malformed = true, len(errs) > 0
		return o, ctrl.Result{}, nil
	}
	if stale, awaited := r.memory.History.Stale(key, obj.GetResourceVersion()); stale {
		// The cache has not seen nudge's last write yet; that write's event
		// brings the workload back, or has come meanwhile (see
		// memo.History.OwnWrites).
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see nudge's last write", "kind", r.Kind.Name(), "resourceVersion", obj.GetResourceVersion(), "eventAwaited", awaited)
		if awaited {
			return nil, ctrl.Result{}, nil
		}
		return nil, ctrl.Result{RequeueAfter: staleWait}, nil
	}
	err = r.inputs(ctx, o, tmpl)
	if errors.Is(err, errCacheBehind) {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see a source the API server has", "kind", r.Kind.Name())
		return nil, ctrl.Result{RequeueAfter: behindWait}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	o.in.Contested, o.contest = r.memory.Taken.Contested(key, o.in, r.Key.ID())
	if err := r.waveInputs(ctx, o); err != nil {
		return nil, ctrl.Result{}, err
	}
	if err := r.restart(ctx, o); err != nil {
		return nil, ctrl.Result{}, err
	}
	return o, ctrl.Result{}, nil
}

// malformed returns the Warning causes of obj's malformed annotations: the
// dialects' errs, and a Deployment's pause period that is no positive
// duration.
func (r *Reconciler) malformed(obj client.Object, errs []error) []record.Cause {
	var causes []record.Cause
	for _, err := range errs {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	}
	if _, err := r.pausePeriod().Of(obj); err != nil && r.Kind == workload.Deployment {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	}
	return causes
}

// inputs gathers into o what rollout.Decide needs from the cache (see
// resolve.Resolver.Inputs), the young sources of a workload nudge saw
// created (see memo.Births), its maintenance window and the producers it
// waits for (see producers) and what pauses it (see
// resolve.Resolver.Pause), with the Warning causes found on the way
// (missing sources, unwatched namespaces, refused references and
// overrides, a malformed window or pause), and the Secrets whose producer
// the gate waited for in vain. It returns errCacheBehind when a source the
// cache misses exists (see cacheBehind).
func (r *Reconciler) inputs(ctx context.Context, o *observed, tmpl *corev1.PodTemplateSpec) error {
	res, obj, key := r.resolver(), o.obj, o.key
	in, resolved, err := res.Inputs(ctx, obj, o.spec, tmpl, r.now())
	if err != nil {
		return fmt.Errorf("reading from the cache: %w", err)
	}
	_, _, refused := res.Limits(o.spec)
	causes := resolve.Warnings(resolved, refused)
	if behind, err := r.cacheBehind(ctx, key, resolved, causes); err != nil || behind {
		return cmp.Or(err, errCacheBehind)
	}
	reads, versions := resolve.Reads(resolved, func(s refs.Source) (string, bool) { return r.Changes.Deleted(s, r.now()) })
	in.Maintenance, err = res.Maintenance(ctx, obj.GetNamespace(), o.spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedWindow):
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	case err != nil:
		return err
	}
	in.PausedBy, err = res.Pause(ctx, obj.GetNamespace(), o.spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedPause):
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	case err != nil:
		return err
	}
	in.Young = r.memory.Births.Young(key, reads, r.Changes, r.now())
	in.Gone = r.memory.Births.Gone(key, res.Key, slices.Concat(in.Missing, in.Kept), r.Changes, r.now())
	in.Settled = r.memory.Births.Settled(key, in.Applied, versions, r.now())
	in.Settled = append(in.Settled, r.memory.Rollouts.Before(key, versions, r.now())...) // written before the pods of nudge's last rollout started
	o.lateProducers = r.producers(key, resolved, &in)
	o.in, o.causes = in, append(o.causes, causes...)
	return nil
}

// producers sets in in the Secrets whose producer is not ready, while the
// workload key's wait for them has not timed out (rollout.Input.Unready,
// see memo.Producers), and returns those it waited for in vain.
func (r *Reconciler) producers(key types.NamespacedName, resolved []resolve.Resolved, in *rollout.Input) []resolve.Resolved {
	if r.Producers == nil {
		return nil
	}
	var late []refs.Source
	in.Unready, in.UnreadyUntil, late = r.memory.Producers.Wait(key, resolve.Unready(resolved), in.Now, r.ProducerTimeout)
	return resolve.Only(resolved, late)
}

// resolver returns the reconciler's Resolver, over its cache.
func (r *Reconciler) resolver() resolve.Resolver {
	return resolve.Resolver{
		Producers: r.Producers,
		Selector:  resolve.Selector{Reader: r.Client, AutoReloadAll: r.AutoReloadAll, Watched: r.Watched, CSI: r.CSI},
		Key:       r.Key,
		Window:    r.Window,
		Changes:   r.Changes,
		Counting:  r.Behaviour.Counting,
		Pace:      r.Pace,
		Dialect:   r.Dialect,
	}
}

// cacheBehind reports whether a ConfigMap or Secret the cache misses, for a
// SourceMissing cause not warned about yet, exists in the API server (see
// lag.Checker.Missing). It returns the API server's error.
func (r *Reconciler) cacheBehind(ctx context.Context, key types.NamespacedName, resolved []resolve.Resolved, causes []record.Cause) (bool, error) {
	var fresh map[string]bool
	var asked []refs.Source
	for _, c := range resolved {
		if (c.Outcome == resolve.Missing || c.Outcome == resolve.Kept) && (c.Kind == refs.ConfigMap || c.Kind == refs.Secret) {
			if fresh == nil {
				fresh = r.memory.Warnings.Unseen(key, causes)
			}
			if fresh[c.MissingNote()] {
				asked = append(asked, c.Source)
			}
		}
	}
	return r.lag.Missing(ctx, key, asked)
}
