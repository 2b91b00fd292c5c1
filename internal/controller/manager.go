package controller

import (
	"fmt"

	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/watch"
	"nudge.dev/nudge/internal/workload"
)

// Options tune the controllers.
type Options struct {
	// Workers is the number of concurrent reconciles per workload kind.
	Workers int
	// IgnoreSources are source kinds not watched at all.
	IgnoreSources map[refs.Kind]bool
	// NamespaceLabels re-reconciles a namespace's workloads when its labels
	// change (with --namespace-selector, they decide whether it is watched).
	NamespaceLabels bool
}

// SetupWithManager registers a controller that reconciles r.Kind on its own
// changes and on changes of the sources it references, found in the source
// index its own watch keeps (sources.Index).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	r.index = sources.NewIndex(r.Kind, r.AutoReloadAll, r.Dialect, r.Client)
	r.lag.Cache, r.lag.Server = r.Client, r.APIReader
	toWorkloads := handler.EnqueueRequestsFromMapFunc(r.workloadsOf)
	// The index first: it sees every event of the kind, in order, and
	// passes those that change a workload's sources (see Index.Tracker).
	changed := []predicate.Predicate{
		r.index.Tracker(),
		predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		workload.SealChanged(),
	}
	changed, waveSources := r.waveWatches(changed)
	// Each kind is watched with a watch.KindSource, not For and Watches: the
	// handlers are added now, before the manager's cache starts, so the
	// informers' first lists feed them, and the workers start as soon as
	// the caches have synced (see watch.KindSource).
	name := r.Kind.Name()
	logs, err := watch.ReconcileLog(mgr, name, r.Kind.New())
	if err != nil {
		return fmt.Errorf("naming the %s controller's logs: %w", name, err)
	}
	queue := watch.NewQueue(ctx, name, logs(nil))
	r.queue = queue
	cached := mgr.GetCache()
	own, err := r.watchNow(ctx, queue, watch.NewKindSource(cached, r.Kind.New(), &handler.EnqueueRequestForObject{}, r.memory.Births.Recorder(r.now), predicate.Or(changed...),
		r.memory.History.OwnWrites()))
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Workers, 1), LogConstructor: logs, NewQueue: watch.QueueOf(queue)}).
		WatchesRawSource(own)
	for _, s := range waveSources {
		b = b.WatchesRawSource(s)
	}
	if r.Jobs != nil && r.Jobs.Journal != nil {
		b = b.WatchesRawSource(source.Func(r.Jobs.Resume(r.watched)))
	}
	// The recorder comes before the filter: it notes every version.
	for kind, obj := range map[refs.Kind]client.Object{refs.ConfigMap: &corev1.ConfigMap{}, refs.Secret: &corev1.Secret{}} {
		if opts.IgnoreSources[kind] {
			continue
		}
		src, err := r.watchNow(ctx, queue, watch.NewKindSource(cached, obj, toWorkloads, r.Changes.Recorder(), r.index.Changed(r.Dialect)))
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	if workload.IsReferrer(r.Kind) { // Rollouts: the Deployments of their spec.workloadRef
		src, err := r.watchNow(ctx, queue, watch.NewKindSource(cached, &appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.index.Referrers), r.index.ReferrerTracker()))
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(src)
	}
	// Left to the controller's start: its handler lists workloads from the
	// cache, which cannot be read before it has synced.
	if opts.NamespaceLabels {
		b = b.WatchesRawSource(watch.NewKindSource(cached, watch.Namespace(), handler.EnqueueRequestsFromMapFunc(watch.InNamespace(r.Client, r.Kind.NewList, nil)), predicate.LabelChangedPredicate{}))
	}
	// A Namespace's pause set or lifted reaches its workloads that carry
	// nudge's applied state (one without is reconciled on its own events).
	// The informer is the one Resolver.Pause and Resolver.Maintenance read.
	if r.NamespaceMarks {
		managed := func(o client.Object) bool { return o.GetAnnotations()[workload.AppliedAnnotation] != "" }
		b = b.WatchesRawSource(watch.NewKindSource(cached, watch.Namespace(), handler.EnqueueRequestsFromMapFunc(watch.InNamespace(r.Client, r.Kind.NewList, managed)), watch.AnnotationChanged(dialect.NudgePaused)))
	}
	// With the CSI flag on already (a kind set up while nudge runs), the pod
	// statuses are watched from the start (see WatchPodStatuses).
	if r.CSI != nil && r.CSI.Load() {
		src, err := r.podStatusSource(ctx, mgr)
		if err != nil {
			return err
		}
		r.podStatuses = true
		b = b.WatchesRawSource(src)
	}
	c, err := b.Build(r)
	r.ctrl = c
	return err
}

// Requeue reconciles again the workloads of r's kind that use the Secret
// src: its producer changed, and may have turned ready (the producer-ready
// gate). It does not block; before SetupWithManager it does nothing.
func (r *Reconciler) Requeue(src refs.Source) {
	if r.index == nil || r.queue == nil {
		return
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name}}
	for _, req := range r.index.Workloads(context.Background(), secret) {
		r.queue.Add(req)
	}
}

// watchNow adds src's handler now, its events going to queue (see
// watch.KindSource.AddHandler), and returns src. When the cache cannot give the
// informer yet, it logs why and leaves the handler to src's start, as
// controller-runtime's Kind source would; it fails only when ctx is done.
func (r *Reconciler) watchNow(ctx context.Context, queue *watch.Queue, src *watch.KindSource) (*watch.KindSource, error) {
	if err := src.AddHandler(ctx, queue); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Could not watch a kind before the controller starts; it will when it starts", "controller", r.Kind.Name(), "source", src.String(), "reason", err.Error())
	}
	return src, nil
}

// WatchPodStatuses makes r's controller (see SetupWithManager) also
// reconcile the workloads of r's kind that may mount the SecretProviderClass
// of each SecretProviderClassPodStatus that changes, read from mgr's cache.
// It may be called while the manager runs; the caller sets the CSI flag of
// the reconcilers after. It does nothing for a controller set up with the
// flag on, which watches them already.
//
// The handler is added to the kind's informer here, before the flag is on
// and so before any reconcile reads a pod status (podStatusSource): a
// version a reconcile reads was then either in the informer's store when
// the handler joined, or reaches the handler later as an update. Added at
// the controller's start instead, as a Kind source adds it, once the
// informer has synced, an update landing between a reconcile's read and the
// handler would reach it only as a create of the initial list, which
// csi.PodStatusChanged drops: a lost rotation.
func (r *Reconciler) WatchPodStatuses(ctx context.Context, mgr ctrl.Manager) error {
	if r.ctrl == nil {
		return fmt.Errorf("watching SecretProviderClassPodStatuses for %ss: the controller is not set up", r.Kind.Name())
	}
	if r.podStatuses {
		return nil
	}
	src, err := r.podStatusSource(ctx, mgr)
	if err != nil {
		return err
	}
	r.podStatuses = true
	return r.ctrl.Watch(src)
}

// podStatusSource returns the source of SecretProviderClassPodStatus events
// for r's controller, its handler added now (see WatchPodStatuses).
func (r *Reconciler) podStatusSource(ctx context.Context, mgr ctrl.Manager) (*watch.KindSource, error) {
	return r.watchNow(ctx, r.queue, watch.NewKindSource(mgr.GetCache(), csi.NewPodStatus(),
		handler.EnqueueRequestsFromMapFunc(r.workloadsOf), csi.PodStatusChanged()))
}
