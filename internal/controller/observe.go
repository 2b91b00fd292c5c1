package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/jobs"
	"nudge.dev/nudge/internal/memo"
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
	// producerCause).
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
}

// decides reports whether o leaves a decision to take.
func (o *observed) decides() bool {
	return !o.optedOut && o.job != jobs.Create && o.job != jobs.Linger
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
		r.waveSaw(ctx, key, nil)
		return nil, ctrl.Result{}, nil
	case err != nil:
		return nil, ctrl.Result{}, err
	}
	r.waveSaw(ctx, key, obj)
	tmpl, err := workload.TemplateOf(ctx, r.Client, r.Kind, obj)
	if tmpl == nil || !r.watched(ctx, obj.GetNamespace()) {
		return nil, ctrl.Result{}, r.unreferenced(ctx, obj, err)
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
	in, more, late, err := r.inputs(ctx, obj, o.spec, tmpl)
	if errors.Is(err, errCacheBehind) {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see a source the API server has", "kind", r.Kind.Name())
		return nil, ctrl.Result{RequeueAfter: behindWait}, nil
	}
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	o.in, o.causes, o.lateProducers = in, append(o.causes, more...), late
	o.in.Contested, o.contest = r.memory.Taken.Contested(key, o.in, r.Key.ID())
	if err := r.waveInputs(ctx, o); err != nil {
		return nil, ctrl.Result{}, err
	}
	more, err = r.restart(ctx, o)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	o.causes = append(o.causes, more...)
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
	pause := r.Dialect.Reloader().PausePeriod
	if v, ok := obj.GetAnnotations()[pause]; ok && r.Kind == workload.Deployment && r.pausePeriod(obj) == 0 {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: fmt.Sprintf(
			"annotation %s: want a positive Go duration such as \"5m\", got %q; not pausing", pause, v)})
	}
	return causes
}

// inputs gathers what rollout.Decide needs from the cache (see
// resolve.Resolver.Inputs), the young sources of a workload nudge saw
// created (see memo.Births), its maintenance window and the producers it
// waits for (see producers) and what pauses it (see
// resolve.Resolver.Pause), with the Warning causes found on the way
// (missing sources, unwatched namespaces, refused references and
// overrides, a malformed window or pause) and the Secrets whose producer the gate
// waited for in vain. It returns errCacheBehind when a source the cache
// misses exists (see cacheBehind).
func (r *Reconciler) inputs(ctx context.Context, obj client.Object, spec dialect.Spec, tmpl *corev1.PodTemplateSpec) (rollout.Input, []record.Cause, []resolve.Resolved, error) {
	res := r.resolver()
	in, resolved, err := res.Inputs(ctx, obj, spec, tmpl, r.now())
	if err != nil {
		return in, nil, nil, fmt.Errorf("reading from the cache: %w", err)
	}
	var causes []record.Cause
	_, _, refused := res.Limits(spec)
	for _, o := range refused {
		causes = append(causes, record.Cause{Reason: record.ReasonOverrideRefused, Note: fmt.Sprintf(
			"Annotation %s %q would loosen %s (%s); used %s (only --allow-workload-overrides lets annotations loosen the flags' limits)",
			o.Annotation, o.Value, o.Flag, o.Limit, o.Limit)})
	}
	for _, c := range resolved {
		switch c.Outcome {
		case resolve.Refused:
			causes = append(causes, record.Cause{Reason: record.ReasonCrossNamespaceRefused, Note: fmt.Sprintf(
				"Did not read %s %s/%s: nudge refuses references to another namespace (--cross-namespace-references=deny); it counts for nothing",
				c.Kind, c.Namespace, c.Name)})
		case resolve.Unwatched:
			causes = append(causes, record.Cause{Reason: record.ReasonNamespaceNotWatched, Note: fmt.Sprintf(
				"Cannot read %s %s/%s: nudge does not watch namespace %q", c.Kind, c.Namespace, c.Name, c.Namespace)})
		case resolve.Kept, resolve.Missing:
			causes = append(causes, record.Cause{Reason: record.ReasonSourceMissing, Note: sourceMissingNote(c)})
		}
		if c.PauseError != nil {
			causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: c.PauseError.Error()})
		}
	}
	behind, err := r.cacheBehind(ctx, client.ObjectKeyFromObject(obj), resolved, causes)
	if err != nil {
		return in, nil, nil, err
	}
	if behind {
		return in, nil, nil, errCacheBehind
	}
	var reads []memo.Read
	versions := map[refs.Source]string{}
	for _, c := range resolved {
		switch c.Outcome {
		case resolve.Counted:
			versions[c.Source] = c.Version
		case resolve.AbsentOptional, resolve.Missing, resolve.Kept:
		default:
			continue
		}
		reads = append(reads, memo.Read{Reference: c.Reference, AbsenceCounts: c.AbsenceCounts})
	}
	in.Maintenance, err = res.Maintenance(ctx, obj.GetNamespace(), spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedWindow):
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	case err != nil:
		return in, nil, nil, err
	}
	in.PausedBy, err = res.Pause(ctx, obj.GetNamespace(), spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedPause):
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	case err != nil:
		return in, nil, nil, err
	}
	key := client.ObjectKeyFromObject(obj)
	in.Young = r.memory.Births.Young(key, reads, r.Changes, r.now())
	in.Gone = r.memory.Births.Gone(key, res.Key, slices.Concat(in.Missing, in.Kept), r.Changes, r.now())
	in.Settled = r.memory.Births.Settled(key, in.Applied, versions, r.now())
	in.Settled = append(in.Settled, r.memory.Rollouts.Before(key, versions, r.now())...) // written before the pods of nudge's last rollout started
	late := r.producers(key, resolved, &in)
	return in, causes, late, nil
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

// cacheBehind reports whether a source the cache misses, for a SourceMissing
// cause not warned about yet, exists in the API server: the cache has not
// seen it yet, and the reconcile should wait (behindWait) rather than warn
// and record a state without it. It asks with one metadata-only LIST by name
// per such source (nudge may list, not get, Secrets), at most
// memo.Lag's limit of reconciles in a row per workload. It returns the API server's error.
func (r *Reconciler) cacheBehind(ctx context.Context, key types.NamespacedName, resolved []resolve.Resolved, causes []record.Cause) (bool, error) {
	var missing []resolve.Resolved
	for _, c := range resolved {
		if (c.Outcome == resolve.Missing || c.Outcome == resolve.Kept) && (c.Kind == refs.ConfigMap || c.Kind == refs.Secret) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 || r.APIReader == nil {
		r.memory.Lag.Forget(key)
		return false, nil
	}
	fresh := r.memory.Warnings.Unseen(key, causes)
	for _, c := range missing {
		if !fresh[sourceMissingNote(c)] {
			continue
		}
		if version, err := r.serverVersion(ctx, c.Source); err != nil {
			return false, err
		} else if version != "" {
			return r.memory.Lag.Wait(key), nil
		}
	}
	return false, nil
}

// sourceMissingNote is the note of the SourceMissing Warning about c, a
// reference whose source does not exist (outcome Missing or Kept).
func sourceMissingNote(c resolve.Resolved) string {
	if c.Outcome == resolve.Kept {
		return fmt.Sprintf("Named %s %s/%s does not exist; its absence rolls nothing", c.Kind, c.Namespace, c.Name)
	}
	return fmt.Sprintf("Required %s %s/%s does not exist; no rollout until it does", c.Kind, c.Namespace, c.Name)
}

// serverVersion returns the resourceVersion of the ConfigMap or Secret src
// as the API server holds it now, "" when it does not exist: one
// metadata-only LIST by name (nudge may list, not get, Secrets).
func (r *Reconciler) serverVersion(ctx context.Context, src refs.Source) (string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(src.Kind) + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(src.Namespace),
		client.MatchingFields{"metadata.name": src.Name}, client.Limit(1)); err != nil {
		return "", fmt.Errorf("looking for %s: %w", src, err)
	}
	if len(list.Items) == 0 {
		return "", nil
	}
	return list.Items[0].ResourceVersion, nil
}
