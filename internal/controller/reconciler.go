package controller

import (
	"context"
	"maps"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/jobs"
	"nudge.dev/nudge/internal/lag"
	"nudge.dev/nudge/internal/memo"
	"nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/watch"
	"nudge.dev/nudge/internal/workload"
)

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconciler rolls the workloads of one kind whose sources changed.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API.
	Client client.Client
	// Metadata writes workloads, answered with their metadata alone.
	Metadata metadata.Interface
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
	// memo.Births); when nil, every change is lone and no source is young.
	Changes *sources.Changes
	// Jobs, for the Job kind with --recreate-jobs, re-creates the Jobs whose
	// sources changed; it must be set for that kind.
	Jobs *jobs.Recreator
	// Evicting, when not nil, lets a rollout restart by eviction the pods
	// its template change cannot reach (--enable-eviction).
	Evicting *eviction.Restarter
	// Producers, when not nil, is the producer-ready gate: a rollout waits
	// for a changed Secret's producer at most ProducerTimeout.
	Producers       resolve.Producers
	ProducerTimeout time.Duration

	// Behaviour pinned by Reloader's flags; see options.Options.
	Behaviour

	memory memo.Workloads        // what is remembered of each workload between reconciles
	lag    lag.Checker           // whether the cache is behind the API server (see behind, cacheBehind); set by SetupWithManager
	index  *sources.Index        // set by SetupWithManager
	ctrl   controller.Controller // set by SetupWithManager
	queue  *watch.Queue          // ctrl's, set by SetupWithManager
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
	// Counting is what of the flags changes which sources count and how
	// (Reloader's --reload-on-create, --reload-on-delete,
	// --resource-label-selector, --resources-to-ignore).
	resolve.Counting
	// Pace is when the flags let a workload roll: the storm brake's budget
	// and the maintenance window (--max-rollouts-per-hour,
	// --maintenance-window).
	resolve.Pace
	// NotifyOnly sends Notify instead of rolling (--webhook-url).
	NotifyOnly bool
	// Notify, when not nil, is told of every rollout (alerts) or, with
	// NotifyOnly, of every change instead. It must not block.
	Notify func(alert.Alert)
	// CronJobStartJob also starts a Job from a CronJob at once.
	CronJobStartJob bool
	// ReloaderEvents records a rollout's Events with Reloader's reasons and
	// messages (--event-reasons=reloader): Normal Reloaded instead of
	// Rolled, and a Warning ReloadFail for each rollout write that failed.
	ReloaderEvents bool
}

// Reconcile compares the workload's applied state with the state of the
// sources it references now, and writes a baseline, a rollout, or nothing.
// It counts itself, and its retries, in Reloader's metrics.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	result, err := r.reconcile(ctx, req.NamespacedName)
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

// reconcile observes the workload key and its sources (observe, which only
// reads), decides once what to do (decide, pure), acts on the decision
// (act, which makes every API write of the reconcile), and records what it
// did (record: Events, metrics, what is remembered of the workload and the
// waves' part).
func (r *Reconciler) reconcile(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	pending := false // waiting for a rollout slot (see fleet.Waves)
	defer func() { r.waveLeave(key, pending) }()
	o, result, err := r.observe(inPhase(ctx, phaseObserve), key)
	if o == nil {
		return result, err
	}
	var v verdict
	if o.decides() {
		v = r.decide(o)
	}
	var over string
	if o.obj != nil {
		over = o.obj.GetResourceVersion()
	}
	result, err = r.act(inPhase(ctx, phaseAct), o, v)
	pending = v.Action == rollout.Pending || o.guarded
	return r.recordOutcome(inPhase(ctx, phaseRecord), o, v, over, result, err)
}

// recordOutcome records what became of verdict v on o's workload, whose version
// was over before act, which returned result and err: the Warnings, the
// decision's metric and log line, what is remembered of the workload (see
// remember) and the waves' part. It returns the reconcile's result.
func (r *Reconciler) recordOutcome(ctx context.Context, o *observed, v verdict, over string, result ctrl.Result, err error) (ctrl.Result, error) {
	if o.optedOut {
		r.memory.Births.Forget(o.key)
	}
	if o.optedOut || o.unread {
		r.warn(ctx, o.obj, o.causes)
		return result, err
	}
	if !o.decides() {
		return result, err
	}
	r.warn(ctx, o.obj, append(v.causes, o.acted...))
	if r.Evicting != nil {
		unfinished := o.unfinished
		if v.Action == rollout.Evict && err == nil {
			unfinished = v.Restart.Unfinished(unfinished)
		}
		r.Metrics.Restart(r.Kind.Name()+"/"+o.key.String(), unfinished)
	}
	r.Metrics.Decided(r.Kind.Name(), v.Action)
	ctrl.LoggerFrom(ctx).V(2).Info("Decided", "kind", r.Kind.Name(), "action", v.Action, "changed", refs.Names(v.Changed), "resourceVersion", over)
	written := err == nil && o.obj.GetResourceVersion() != over
	if v.heldBegins && written {
		r.recordPace(ctx, o, v.Decision)
	}
	if v.Action != rollout.Contested {
		r.remember(o, v.Decision, written)
	}
	if v.Action != rollout.Roll {
		r.lag.NoRollout(o.key)
	}
	return r.waveRecorded(ctx, o, v.Decision, over, written, result), err
}

// remember records in r's memory of workload o what became of decision d:
// written says that a write went through, a conflict (retried without an
// error) not (TestChangeJustBeforeCreationRollsNothing).
func (r *Reconciler) remember(o *observed, d rollout.Decision, written bool) {
	r.memory.Unrolled.Settle(o.key, d.Action)
	r.memory.Births.Decided(o.key, o.in.Young, d, written, o.in.Now)
	if d.Action == rollout.Baseline && d.FirstSight && len(o.in.Missing) > 0 && written {
		// A required source is missing: the pods cannot start before it
		// exists, and then start with what the sources hold. No young
		// source is left to roll for, now or once it exists (rule 3).
		r.memory.Births.Forget(o.key)
	}
}

// act carries out, with every API write of the reconcile, what o and its
// verdict v call for: a pending Job's step (see jobs.Recreator.Carry); an
// opted-out workload's release; a baseline or a rollout, written and
// remembered (see written) after the rollout's guards (behind, waveSlot);
// a paced change recorded on the workload (see paced); the waves' marks (a
// hold, its end); a wait asks to be called back. A pause nudge started ends
// when due, whatever the decision.
func (r *Reconciler) act(ctx context.Context, o *observed, v verdict) (ctrl.Result, error) {
	if o.unread {
		return ctrl.Result{}, nil
	}
	if o.job != jobs.Proceed {
		result, err := r.Jobs.Carry(ctx, jobReport{r}, o.key, o.job)
		if err != nil || o.job != jobs.Forget { // Create, Linger: nothing else
			return result, err
		}
	}
	if o.optedOut {
		if !o.malformed {
			if err := r.release(ctx, o.obj); err != nil {
				return r.retry(ctx, err)
			}
		}
		return r.resume(ctx, o.obj, ctrl.Result{})
	}
	d := v.Decision
	obj, over := o.obj, o.obj.GetResourceVersion()
	marks := r.waveMarks(obj, d)
	var result ctrl.Result
	switch d.Action {
	case rollout.Wait:
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the rollout window to end", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "after", d.RequeueAfter)
		result.RequeueAfter = d.RequeueAfter
	case rollout.Baseline:
		c := r.stateChange(obj, d.Write.Format(o.key.Namespace))
		if _, paced := obj.GetAnnotations()[workload.HeldAnnotation]; paced {
			c.Annotations[workload.HeldAnnotation] = nil // the change paced is no change any more
		}
		maps.Copy(c.Annotations, marks)
		if err := r.written(o.key, obj, d.FirstSight, func() error { return r.apply(ctx, obj, c) }); err != nil {
			return r.retry(ctx, err)
		}
		r.memory.Taken.Took(o.key, o.in, r.Key.ID())
		ctrl.LoggerFrom(ctx).V(1).Info("Recorded baseline", "kind", r.Kind.Name(), "firstSight", d.FirstSight)
		marks = nil
	case rollout.None:
		if _, paced := obj.GetAnnotations()[workload.HeldAnnotation]; paced {
			// The sources went back to what the pods run with: nothing waits.
			marks[workload.HeldAnnotation] = nil
		}
	case rollout.Deferred, rollout.Braked:
		result.RequeueAfter = d.RequeueAfter
		if v.held != nil {
			marks[workload.HeldAnnotation] = v.held
		}
	case rollout.Paused:
		ctrl.LoggerFrom(ctx).V(1).Info("Holding the rollout: paused", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "by", o.in.PausedBy)
	case rollout.Gated:
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for a producer to be ready", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "after", d.RequeueAfter)
		result.RequeueAfter = d.RequeueAfter
	case rollout.Contested:
		result.RequeueAfter = d.RequeueAfter
	case rollout.Evict:
		res, err := r.evict(ctx, o, d)
		if err != nil {
			return r.retry(ctx, err)
		}
		result = res
	case rollout.Roll:
		if wait, err := r.guard(ctx, o, d); err != nil || wait > 0 {
			o.guarded = wait > 0
			return ctrl.Result{RequeueAfter: wait}, err
		}
		applied := d.Write.Format(o.key.Namespace)
		if err := r.written(o.key, obj, false, func() error { return r.roll(ctx, obj, d, applied, o.in.Now, o.spec.ReloaderSelected(r.AutoReloadAll)) }); err != nil {
			return r.retry(ctx, err)
		}
		made := obj.GetResourceVersion() // of the rollout's write: the pods start after it
		if r.NotifyOnly {
			made = "" // no pods started
		}
		r.memory.Rollouts.Made(o.key, o.in.Now, made)
		marks = nil // the rollout's write carries them (see fleet.Waves.Annotate)
	}
	result = sooner(result, d.Resume)
	if len(marks) > 0 {
		if err := r.apply(ctx, obj, workload.Change{ResourceVersion: over, Annotations: marks}); err != nil {
			return r.retry(ctx, err)
		}
	}
	return r.resume(ctx, obj, result)
}

// sooner returns result asking to be called back after at the latest
// (0: no need).
func sooner(result ctrl.Result, after time.Duration) ctrl.Result {
	if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
		result.RequeueAfter = after
	}
	return result
}

// guard runs act's guards of rollout d of o's workload just before its
// write: the cache may be behind the API server where the rollout may not
// trust it (see behind), and with waves on the slot the decision counted
// on must still be free (see waveSlot). It returns how long to wait
// instead of writing, 0 to write, and the API server's error.
func (r *Reconciler) guard(ctx context.Context, o *observed, d rollout.Decision) (time.Duration, error) {
	behind, err := r.behind(ctx, o.key, o.in, d)
	switch {
	case err != nil:
		return 0, err
	case behind:
		return behindWait, nil
	case r.Waves != nil && !r.waveSlot(ctx, o):
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting: the rollout slot went to another workload", "kind", r.Kind.Name())
		return slotTakenWait, nil
	}
	return 0, nil
}

// slotTakenWait is how long a rollout whose slot another workload took
// between its decision and its write waits to be decided again (Pending,
// woken when a slot frees).
const slotTakenWait = 10 * time.Millisecond

// written makes write of obj through memo.History.Write, and requeues key if
// an event held back meanwhile was another's (made is "" with waves).
func (r *Reconciler) written(key types.NamespacedName, obj client.Object, firstSight bool, write func() error) error {
	over := obj.GetResourceVersion()
	again, err := r.memory.History.Write(key, firstSight, func() (_, made string, err error) {
		if err = write(); r.Waves == nil {
			made = obj.GetResourceVersion()
		}
		return over, made, err
	})
	if again && r.queue != nil {
		r.queue.Add(reconcile.Request{NamespacedName: key})
	}
	return err
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

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Reconciler) watched(ctx context.Context, namespace string) bool {
	return r.Watched == nil || r.Watched(ctx, namespace)
}

// phase names the phase of a reconcile a context is of: observe, act or
// record (decide is pure, and takes none). Every API write of a reconcile
// is made in act (TestWritesOnlyInAct reads it from the requests).
type phase string

const (
	phaseObserve phase = "observe"
	phaseAct     phase = "act"
	phaseRecord  phase = "record"
)

type phaseKey struct{}

// inPhase returns ctx marked with phase p.
func inPhase(ctx context.Context, p phase) context.Context {
	return context.WithValue(ctx, phaseKey{}, p)
}
