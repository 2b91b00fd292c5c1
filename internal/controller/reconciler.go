package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/jobs"
	"nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconciler rolls the workloads of one kind whose sources changed.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API.
	Client client.Client
	// APIReader reads from the API directly, for the rare write that needs
	// what the cache trims (see trim.Workload).
	APIReader client.Reader
	// Kind is the workload kind reconciled.
	Kind workload.Kind
	// Key is the installation's fingerprint key.
	Key fingerprint.Key
	// Recorder records Events on workloads.
	Recorder events.EventRecorder
	// Window is the default rollout window (see rollout.Input.Window).
	Window time.Duration
	// Watched reports whether nudge watches a namespace; sources elsewhere are
	// refused with a Warning Event.
	Watched func(ctx context.Context, namespace string) bool
	// Clock tells the time; clock.RealClock when nil.
	Clock clock.PassiveClock
	// AutoReloadAll is Reloader's --auto-reload-all: every workload is in auto
	// mode unless it opts out.
	AutoReloadAll bool
	// Dialect reads the workloads' annotations and the sources' marks, with
	// Reloader's annotation names as its flags set them; the zero Parser
	// reads Reloader's default names.
	Dialect dialect.Parser
	// Metrics counts what the reconciler does; may be nil.
	Metrics *metrics.Metrics
	// Lull, when not nil, is told of every workload write (see record.Lull).
	Lull *record.Lull
	// Reconciled, when not nil, is told of the end of every reconcile: the
	// start's work is done once it and Lull are both quiet.
	Reconciled *record.Lull
	// CSI, when not nil and true, says that nudge watches the Secrets Store
	// CSI driver's SecretProviderClassPodStatuses (see WatchPodStatuses);
	// otherwise SecretProviderClasses count for nothing.
	CSI *atomic.Bool
	// Waves, when not nil, bounds the rollouts in flight and halts a change
	// whose rollout fails (--max-concurrent-rollouts); shared by every kind.
	Waves *fleet.Waves
	// Changes, shared by every kind, remembers the sources' content changes
	// of the last minute: when, to tell a lone change from a burst (rule 1),
	// and at which resourceVersion per key, for first sight (rule 3, see
	// births); when nil, every change is lone and no source is young.
	Changes *sources.Changes
	// Jobs, for the Job kind with --recreate-jobs, re-creates the Jobs whose
	// sources changed; it must be set for that kind.
	Jobs *jobs.Recreator

	// Behaviour pinned by Reloader's flags; see options.Options.
	Behaviour

	warnings warnings
	history  history               // nudge's last write per workload, to tell a stale cache
	changes  changes               // when nudge saw a source change of a workload, for its latency
	lag      lag                   // reconciles in a row that found the cache behind (see cacheBehind)
	handover lag                   // reconciles in a row that found the cache behind another nudge's rollout (see behindAnother)
	rollouts rollouts              // nudge's own rollouts of the last foreignWindow (see behindAnother)
	caughtUp caughtUp              // when the cache last held the API server's version of a source (see behindAnother)
	births   births                // workloads seen created, for first sight (see births)
	taken    ownership.Takeovers   // states taken over from another key
	index    *sources.Index        // set by SetupWithManager
	ctrl     controller.Controller // set by SetupWithManager
	queue    *controllerQueue      // ctrl's, set by SetupWithManager
	// Whether ctrl watches SecretProviderClassPodStatuses (see
	// WatchPodStatuses); read and set under the CSI watch's lock.
	podStatuses bool
}

// Behaviour is what Reloader's flags and nudge's options change in how a
// workload is rolled. The zero value is nudge's default.
type Behaviour struct {
	// EnvVars selects Reloader's env-vars strategy instead of a pod-template
	// annotation.
	EnvVars bool
	// ReloadOnCreate and ReloadOnDelete are Reloader's flags of those names.
	ReloadOnCreate, ReloadOnDelete bool
	// SourceSelector, when not nil, is the --resource-label-selector: other
	// sources never count.
	SourceSelector labels.Selector
	// IgnoreSources are source kinds never counted (--resources-to-ignore).
	IgnoreSources map[refs.Kind]bool
	// NotifyOnly sends Notify instead of rolling (--webhook-url).
	NotifyOnly bool
	// Notify, when not nil, is told of every rollout (alerts) or, with
	// NotifyOnly, of every change instead. It must not block.
	Notify func(Rolled)
	// CronJobStartJob also starts a Job from a CronJob at once.
	CronJobStartJob bool
	// ReloaderEvents records a rollout's Events with Reloader's reasons and
	// messages (--event-reasons=reloader): Normal Reloaded instead of
	// Rolled, and a Warning ReloadFail for each rollout write that failed.
	ReloaderEvents bool
}

// Rolled describes one rollout (or, with NotifyOnly, one change) for
// notifications. It holds no source content.
type Rolled struct {
	Kind, Namespace, Name string
	Sources               []refs.Source
	Time                  time.Time
	// Halted, when not empty, says why the workload was not rolled: its
	// rollout is halted (see fleet.Waves).
	Halted string
}

// Reconcile compares the workload's applied state with the state of the
// sources it references now, and writes a baseline, a rollout, or nothing.
// It counts itself, and its retries, in Reloader's metrics.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	result, err := r.reconcile(ctx, req)
	if r.Reconciled != nil {
		r.Reconciled.Wrote(time.Now())
	}
	outcome := metrics.ResultSuccess
	if err != nil {
		outcome = metrics.ResultError
		r.Metrics.Retried()
	}
	r.Metrics.Reconciled(outcome, time.Since(start))
	return result, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pending := false // waiting for a rollout slot (see fleet.Waves)
	if r.Waves != nil {
		defer func() {
			if !pending {
				r.Waves.Leave(r.waveKey(req.NamespacedName))
			}
		}()
	}
	obj := r.Kind.New()
	err := r.Client.Get(ctx, req.NamespacedName, obj)
	if handled, result, err := r.Jobs.Pending(ctx, jobReport{r}, req.NamespacedName, obj, err); handled {
		return result, err
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.warnings.forget(req.NamespacedName)
			r.history.forget(req.NamespacedName)
			r.taken.Forget(req.NamespacedName)
			r.changes.forget(req.NamespacedName)
			r.lag.forget(req.NamespacedName)
			r.handover.forget(req.NamespacedName)
			r.births.forget(req.NamespacedName)
			r.Waves.Gone(r.waveKey(req.NamespacedName))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	r.Waves.Observe(ctx, r.waveKey(req.NamespacedName), obj, r.now())
	tmpl := r.Kind.Template(obj)
	if tmpl == nil || !r.watched(ctx, obj.GetNamespace()) {
		return ctrl.Result{}, nil
	}
	spec, errs := r.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
	var causes []record.Cause
	for _, err := range errs {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	}
	pause := r.Dialect.Reloader().PausePeriod
	if v, ok := obj.GetAnnotations()[pause]; ok && r.Kind == workload.Deployment && r.pausePeriod(obj) == 0 {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: fmt.Sprintf(
			"annotation %s: want a positive Go duration such as \"5m\", got %q; not pausing", pause, v)})
	}
	if !spec.Enabled(r.AutoReloadAll) {
		r.births.forget(req.NamespacedName)
		r.warn(ctx, obj, causes)
		// A malformed annotation may be a mistyped opt-in: keep the state,
		// so that once it is mended a change made meanwhile still rolls.
		if len(errs) == 0 {
			if err := r.release(ctx, obj); err != nil {
				return r.retry(ctx, err)
			}
		}
		return r.resume(ctx, obj, ctrl.Result{})
	}
	if stale, awaited := r.history.stale(req.NamespacedName, obj.GetResourceVersion()); stale {
		// The cache has not seen nudge's last write yet; that write's event
		// brings the workload back, or has come meanwhile (see ownWrites).
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see nudge's last write", "kind", r.Kind.Name(), "resourceVersion", obj.GetResourceVersion(), "eventAwaited", awaited)
		if awaited {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: staleWait}, nil
	}

	in, more, err := r.inputs(ctx, obj, spec, tmpl)
	if errors.Is(err, errCacheBehind) {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see a source the API server has", "kind", r.Kind.Name())
		return ctrl.Result{RequeueAfter: behindWait}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	causes = append(causes, more...)
	d := rollout.Decide(in)
	var hold fleet.Hold
	if r.Waves != nil {
		if d, more, hold, err = r.Waves.Decide(ctx, r.waveKey(req.NamespacedName), obj, &in, d, r.contentDigest); err != nil {
			return ctrl.Result{}, err
		}
		causes = append(causes, more...)
		pending = d.Action == rollout.Pending
	}
	if c, ok := decisionCause(d, ownership.WrittenBackBy(obj.GetManagedFields())); ok {
		causes = append(causes, c)
	}
	if wait, c := r.taken.Contested(req.NamespacedName, in, d, r.Key.ID()); wait > 0 {
		r.warn(ctx, obj, append(causes, c))
		return r.resume(ctx, obj, ctrl.Result{RequeueAfter: wait})
	}
	if behind, err := r.behindAnother(ctx, req.NamespacedName, in, d); err != nil {
		return ctrl.Result{}, err
	} else if behind {
		return ctrl.Result{RequeueAfter: behindWait}, nil
	}
	r.warn(ctx, obj, causes)
	r.Metrics.Decided(r.Kind.Name(), d.Action)
	ctrl.LoggerFrom(ctx).V(2).Info("Decided", "kind", r.Kind.Name(), "action", d.Action, "changed", refs.Names(d.Changed), "resourceVersion", obj.GetResourceVersion())
	over := obj.GetResourceVersion()
	// Reloader's annotations (or its --auto-reload-all, alone) select the
	// workload: its rollout also writes Reloader's last-reloaded-from.
	stakater := slices.Contains(spec.Dialects, dialect.Reloader) || (len(spec.Dialects) == 0 && r.AutoReloadAll)
	result, err := r.act(ctx, obj, in, d, stakater)
	r.changes.settle(req.NamespacedName, d.Action)
	// Written: a write went through (act sets obj's resourceVersion from
	// its answer). A write conflict is retried without an error, and
	// wrote nothing: a baseline read from a cache behind the API server,
	// taken for written, made births remember content the workload never
	// got (TestChangeJustBeforeCreationRollsNothing, clean-clone make test).
	written := err == nil && obj.GetResourceVersion() != over
	r.births.decided(req.NamespacedName, in.Young, d, written, in.Now)
	if d.Action == rollout.Baseline && d.FirstSight && len(in.Missing) > 0 && written {
		// A required source is missing: the pods cannot start before it
		// exists, and then start with what the sources hold. No young
		// source is left to roll for, now or once it exists (rule 3).
		r.births.forget(req.NamespacedName)
	}
	if r.Waves == nil {
		return result, err
	}
	if err != nil {
		r.Waves.NotWritten(r.waveKey(req.NamespacedName), obj, d, over)
		return result, err
	}
	return r.afterWave(ctx, obj, d, hold, over, result)
}

// decisionCause returns the Warning a decision deserves, if any; by is the
// manager that wrote a restored state back.
func decisionCause(d rollout.Decision, by string) (record.Cause, bool) {
	switch d.Action {
	case rollout.Hold:
		return record.Cause{Reason: record.ReasonRolloutHeld, Note: fmt.Sprintf(
			"Held the rollout for %s until the missing required source(s) exist", refs.Names(d.Changed))}, true
	case rollout.Restored:
		return record.Cause{Reason: record.ReasonStateRestored, Note: fmt.Sprintf(
			"%s and the label %s were set back by %s to a state nudge had replaced (a manifest exported from the live object "+
				"and applied again?); nudge does not roll for it, so that it and the tool that wrote it do not take turns. "+
				"Remove nudge.dev/ keys from the manifest", workload.AppliedAnnotation, workload.SealLabel, by)}, true
	}
	return record.Cause{}, false
}

// act carries out decision d, taken on inputs in, on obj: a baseline or a
// rollout is written and remembered (see history); a wait asks to be called
// back. A pause nudge started ends when due, whatever the decision.
// stakater says Reloader's annotations select obj (see roll).
func (r *Reconciler) act(ctx context.Context, obj client.Object, in rollout.Input, d rollout.Decision, stakater bool) (ctrl.Result, error) {
	key, over := client.ObjectKeyFromObject(obj), obj.GetResourceVersion()
	var result ctrl.Result
	switch d.Action {
	case rollout.Wait:
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the rollout window to end", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "after", d.RequeueAfter)
		result.RequeueAfter = d.RequeueAfter
	case rollout.Baseline:
		applied := d.Write.Format(key.Namespace)
		if err := r.apply(ctx, obj, r.stateChange(obj, applied)); err != nil {
			return r.retry(ctx, err)
		}
		r.history.wrote(key, over, r.made(obj), d.FirstSight)
		r.taken.Took(key, in, r.Key.ID())
		ctrl.LoggerFrom(ctx).V(1).Info("Recorded baseline", "kind", r.Kind.Name(), "firstSight", d.FirstSight)
	case rollout.Roll:
		applied := d.Write.Format(key.Namespace)
		if err := r.roll(ctx, obj, d, applied, in.Now, stakater); err != nil {
			return r.retry(ctx, err)
		}
		r.history.wrote(key, over, r.made(obj), false)
		r.rollouts.made(key, in.Now)
	}
	return r.resume(ctx, obj, result)
}

// staleWait is how long a reconcile that read a version nudge has written
// over waits when the write's event has come meanwhile: the cache holds the
// write once its event is handled, so a moment.
const staleWait = 10 * time.Millisecond

// made returns the resourceVersion of obj, as nudge's write returned it, for
// history.wrote: "" when nudge reconciles its own writes' events (with
// waves, which follow each rollout's progress from its events).
func (r *Reconciler) made(obj client.Object) string {
	if r.Waves != nil {
		return ""
	}
	return obj.GetResourceVersion()
}

// inputs gathers what rollout.Decide needs from the cache (see
// Resolver.Inputs) and the young sources of a workload nudge saw created
// (see births), with the Warning causes found on the way (missing
// sources, unwatched namespaces). It returns errCacheBehind when a source
// the cache misses exists (see cacheBehind).
func (r *Reconciler) inputs(ctx context.Context, obj client.Object, spec dialect.Spec, tmpl *corev1.PodTemplateSpec) (rollout.Input, []record.Cause, error) {
	in, resolved, err := r.resolver().Inputs(ctx, obj, spec, tmpl, r.now())
	if err != nil {
		return in, nil, fmt.Errorf("reading from the cache: %w", err)
	}
	var causes []record.Cause
	for _, c := range resolved {
		switch c.Outcome {
		case Unwatched:
			causes = append(causes, record.Cause{Reason: record.ReasonNamespaceNotWatched, Note: fmt.Sprintf(
				"Cannot read %s %s/%s: nudge does not watch namespace %q", c.Kind, c.Namespace, c.Name, c.Namespace)})
		case Kept, Missing:
			causes = append(causes, record.Cause{Reason: record.ReasonSourceMissing, Note: sourceMissingNote(c)})
		}
	}
	behind, err := r.cacheBehind(ctx, client.ObjectKeyFromObject(obj), resolved, causes)
	if err != nil {
		return in, nil, err
	}
	if behind {
		return in, nil, errCacheBehind
	}
	var counted []refs.Reference
	versions := map[refs.Source]string{}
	for _, c := range resolved {
		if c.Outcome == Counted {
			counted = append(counted, c.Reference)
			versions[c.Source] = c.Version
		}
	}
	key := client.ObjectKeyFromObject(obj)
	in.Young = r.births.young(key, counted, r.Changes, r.now())
	in.Settled = r.births.settled(key, in.Applied, versions, r.now())
	return in, causes, nil
}

// resolver returns the reconciler's Resolver, over its cache.
func (r *Reconciler) resolver() Resolver {
	return Resolver{
		Selector:  Selector{Reader: r.Client, AutoReloadAll: r.AutoReloadAll, Watched: r.Watched, CSI: r.CSI},
		Key:       r.Key,
		Window:    r.Window,
		Changes:   r.Changes,
		Behaviour: r.Behaviour,
		Dialect:   r.Dialect,
	}
}

// retry turns a conflict (the cache was behind the API) into a prompt
// requeue; other errors go to the workqueue's backoff.
func (r *Reconciler) retry(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		r.Metrics.Retried()
		ctrl.LoggerFrom(ctx).V(1).Info("Retrying after a write conflict", "kind", r.Kind.Name())
		return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, nil
	}
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// rolled records a rollout: a Normal Event (Rolled, or with ReloaderEvents
// Reloader's Reloaded), a log line in Reloader's words, and the rollout
// counter.
func (r *Reconciler) rolled(ctx context.Context, obj client.Object, changed []refs.Source) {
	kind := r.Kind.Name()
	detected := detectedIn(changed)
	if r.ReloaderEvents {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, record.ReasonReloaded, "Reload", "%s", record.Note(fmt.Sprintf(
			"Changes detected in %s, Updated '%s' of type '%s' in namespace '%s'", detected, obj.GetName(), kind, obj.GetNamespace())))
	} else {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, record.ReasonRolled, "Roll",
			"%s", record.Note(fmt.Sprintf("Rolled %s %s because %s changed", kind, obj.GetName(), refs.Names(changed))))
	}
	ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("Changes detected in %s; updated '%s' of type '%s' in namespace '%s'",
		detected, obj.GetName(), kind, obj.GetNamespace()),
		"kind", kind, "sources", refs.Names(changed))
	r.Metrics.Rolled(kind, obj.GetNamespace())
	if at, ok := r.changes.take(client.ObjectKeyFromObject(obj)); ok {
		r.Metrics.Waited(kind, r.now().Sub(at))
	}
	r.notify(obj, changed)
}

// detectedIn names the sources in changed as Reloader's log lines and Events
// do: "'db' of type 'SECRET' in namespace 'shop', ...".
func detectedIn(changed []refs.Source) string {
	var out []string
	for _, s := range changed {
		out = append(out, fmt.Sprintf("'%s' of type '%s' in namespace '%s'", s.Name, strings.ToUpper(string(s.Kind)), s.Namespace))
	}
	return strings.Join(out, ", ")
}

func (r *Reconciler) notify(obj client.Object, changed []refs.Source) {
	if r.Notify != nil {
		r.Notify(Rolled{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Sources: changed, Time: r.now()})
	}
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) watched(ctx context.Context, namespace string) bool {
	return r.Watched == nil || r.Watched(ctx, namespace)
}
