package controller

import (
	"context"
	"slices"
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

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/jobs"
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
	Evicting *Evicting
	// Producers, when not nil, is the producer-ready gate: a rollout waits
	// for a changed Secret's producer at most ProducerTimeout.
	Producers       resolve.Producers
	ProducerTimeout time.Duration

	// Behaviour pinned by Reloader's flags; see options.Options.
	Behaviour

	memory   memo.Workloads        // what is remembered of each workload between reconciles
	caughtUp memo.CaughtUp         // when the cache last held the API server's version of a source (see behind)
	index    *sources.Index        // set by SetupWithManager
	ctrl     controller.Controller // set by SetupWithManager
	queue    *watch.Queue          // ctrl's, set by SetupWithManager
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

// reconcile observes the workload key and its sources in the cache, decides
// once what to do (see decide), acts on the decision, and records what it
// did: Events, metrics and what is remembered of the workload.
func (r *Reconciler) reconcile(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	pending := false // waiting for a rollout slot (see fleet.Waves)
	if r.Waves != nil {
		defer func() {
			if !pending {
				r.Waves.Leave(r.waveKey(key))
			}
		}()
	}
	// Observe: the workload, its annotations and its sources, from the cache.
	o, result, err := r.observe(ctx, key)
	if o == nil {
		return result, err
	}
	// Decide, once, and say what was decided.
	v, err := r.decide(ctx, o)
	pending = v.Action == rollout.Pending
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case v.behind:
		return ctrl.Result{RequeueAfter: behindWait}, nil
	case v.contested > 0:
		r.warn(ctx, o.obj, v.causes)
		return r.resume(ctx, o.obj, ctrl.Result{RequeueAfter: v.contested})
	}
	r.warn(ctx, o.obj, v.causes)
	r.Metrics.Decided(r.Kind.Name(), v.Action)
	ctrl.LoggerFrom(ctx).V(2).Info("Decided", "kind", r.Kind.Name(), "action", v.Action, "changed", refs.Names(v.Changed), "resourceVersion", o.obj.GetResourceVersion())
	// Act: write what the decision calls for.
	over := o.obj.GetResourceVersion()
	result, err = r.act(ctx, o, v.Decision)
	// Record: what is remembered of the workload, and the waves' part.
	r.remember(o, v.Decision, err == nil && o.obj.GetResourceVersion() != over)
	if r.Waves == nil {
		return result, err
	}
	if err != nil {
		r.Waves.NotWritten(r.waveKey(key), o.obj, v.Decision, over)
		return result, err
	}
	return r.afterWave(ctx, o.obj, v.Decision, v.halt, over, result)
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

// act carries out decision d, taken on o's inputs, on o's workload: a
// baseline or a rollout is written and remembered (see written); a paced
// change is recorded on the workload (see pace); a wait asks to be called
// back. A pause nudge started ends when due, whatever the decision.
func (r *Reconciler) act(ctx context.Context, o *observed, d rollout.Decision) (ctrl.Result, error) {
	obj, over := o.obj, o.obj.GetResourceVersion()
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
		if err := r.written(o.key, obj, d.FirstSight, func() error { return r.apply(ctx, obj, c) }); err != nil {
			return r.retry(ctx, err)
		}
		r.memory.Taken.Took(o.key, o.in, r.Key.ID())
		ctrl.LoggerFrom(ctx).V(1).Info("Recorded baseline", "kind", r.Kind.Name(), "firstSight", d.FirstSight)
	case rollout.None:
		if _, paced := obj.GetAnnotations()[workload.HeldAnnotation]; paced {
			// The sources went back to what the pods run with: nothing waits.
			c := workload.Change{ResourceVersion: over, Annotations: map[string]*string{workload.HeldAnnotation: nil}}
			if err := r.apply(ctx, obj, c); err != nil {
				return r.retry(ctx, err)
			}
		}
	case rollout.Deferred, rollout.Braked:
		if err := r.pace(ctx, o, d); err != nil {
			return r.retry(ctx, err)
		}
		result.RequeueAfter = d.RequeueAfter
	case rollout.Paused:
		ctrl.LoggerFrom(ctx).V(1).Info("Holding the rollout: paused", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "by", o.in.PausedBy)
	case rollout.Gated:
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for a producer to be ready", "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "after", d.RequeueAfter)
		result.RequeueAfter = d.RequeueAfter
	case rollout.Evict:
		res, err := r.evict(ctx, o, d)
		if err != nil {
			return r.retry(ctx, err)
		}
		result = res
	case rollout.Roll:
		applied := d.Write.Format(o.key.Namespace)
		if err := r.written(o.key, obj, false, func() error { return r.roll(ctx, obj, d, applied, o.in.Now, r.stakater(o.spec)) }); err != nil {
			return r.retry(ctx, err)
		}
		made := obj.GetResourceVersion() // of the rollout's write: the pods start after it
		if r.NotifyOnly {
			made = "" // no pods started
		}
		r.memory.Rollouts.Made(o.key, o.in.Now, made)
		if d.Restarts {
			// Its own write's event brings nothing: come back to evict.
			result.RequeueAfter = time.Second
		}
	}
	return r.resume(ctx, obj, result)
}

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

// stakater reports whether Reloader's annotations (or its
// --auto-reload-all, alone) select a workload of spec: its rollout also
// writes Reloader's last-reloaded-from (see roll).
func (r *Reconciler) stakater(spec dialect.Spec) bool {
	return slices.Contains(spec.Dialects, dialect.Reloader) || (len(spec.Dialects) == 0 && r.AutoReloadAll)
}

// afterWave does, after act, what decision d taken with waves on still asks
// (see fleet.Waves.After), and says so when it halted obj.
func (r *Reconciler) afterWave(ctx context.Context, obj client.Object, d rollout.Decision, halt fleet.Hold, over string, result ctrl.Result) (ctrl.Result, error) {
	after, halted, err := r.Waves.After(ctx, r.waveKey(client.ObjectKeyFromObject(obj)), obj, d, halt, over, r.now(), r.apply)
	if err != nil {
		return r.retry(ctx, err)
	}
	if halted {
		ctrl.LoggerFrom(ctx).Info("Halted rollout of "+r.Kind.Name(), "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "halt", halt.Value)
		if r.Notify != nil {
			r.Notify(Rolled{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Sources: d.Changed, Time: r.now(),
				Halted: "the rollout of " + halt.After + " for the same change failed"})
		}
	}
	if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
		result.RequeueAfter = after
	}
	return result, nil
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
