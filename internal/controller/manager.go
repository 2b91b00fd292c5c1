package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
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

// SetupWithManager registers the source index for r.Kind and a controller
// that reconciles r.Kind on its own changes and on changes of the sources it
// references.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	index, err := sources.NewIndex(ctx, mgr, r.Kind, r.AutoReloadAll, r.Dialect)
	if err != nil {
		return fmt.Errorf("indexing %ss by source: %w", r.Kind.Name(), err)
	}
	r.index = index
	toWorkloads := handler.EnqueueRequestsFromMapFunc(r.workloadsOf)
	changed := []predicate.Predicate{
		predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		predicate.LabelChangedPredicate{},
	}
	if r.Waves != nil {
		changed = append(changed, fleet.ProgressChanged())
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.Kind.Name()).
		For(r.Kind.New(), builder.WithPredicates(r.births.recorder(r.now), r.history.ownWrites(), predicate.Or(changed...))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.Workers, 1)})
	if r.Waves != nil {
		b = b.WatchesRawSource(source.Func(r.Waves.Register(r.Kind, r.Client)))
	}
	if r.Jobs != nil && r.Jobs.Journal != nil {
		b = b.WatchesRawSource(source.Func(r.Jobs.Resume(r.watched)))
	}
	// The recorder comes before the filter: it notes every version.
	if !opts.IgnoreSources[refs.ConfigMap] {
		b = b.Watches(&corev1.ConfigMap{}, toWorkloads, builder.WithPredicates(r.updates.Recorder(), r.Changes.Recorder(), sources.Changed(r.Dialect)))
	}
	if !opts.IgnoreSources[refs.Secret] {
		b = b.Watches(&corev1.Secret{}, toWorkloads, builder.WithPredicates(r.updates.Recorder(), r.Changes.Recorder(), sources.Changed(r.Dialect)))
	}
	if opts.NamespaceLabels {
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		b = b.WatchesMetadata(ns, handler.EnqueueRequestsFromMapFunc(r.workloadsIn),
			builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	c, err := b.Build(r)
	r.ctrl = c
	return err
}
