package csi

import (
	"context"
	"sync"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Watcher is a workload reconciler that can also watch
// SecretProviderClassPodStatuses (controller.Reconciler).
type Watcher interface {
	// WatchPodStatuses makes the watcher's controller, set up with mgr,
	// reconcile the workloads that may mount the SecretProviderClass of
	// each SecretProviderClassPodStatus that changes. It may be called
	// while mgr runs, and does nothing when the controller watches them
	// already.
	WatchPodStatuses(ctx context.Context, mgr ctrl.Manager) error
}

// Watch turns Reloader's --enable-csi-integration on: once the API serves
// the Secrets Store CSI driver's SecretProviderClassPodStatuses (Start),
// every Watcher set up (Setup), including those set up later (Argo
// Rollouts, custom kinds), also watches them, and only then do
// SecretProviderClasses count. The zero value is ready to use; it is safe
// for concurrent use.
type Watch struct {
	mu       sync.Mutex
	watchers []Watcher
	watching bool
}

// Setup runs setup (r's SetupWithManager with mgr) and adds r, holding w's
// lock throughout: a controller set up once the pod statuses are watched
// watches them from its start, and one set up before Start has begun is
// among those Start watches with. It returns setup's error, or the one of
// r's watch.
func (w *Watch) Setup(ctx context.Context, mgr ctrl.Manager, r Watcher, setup func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := setup(); err != nil {
		return err
	}
	w.watchers = append(w.watchers, r)
	if !w.watching {
		return nil
	}
	return r.WatchPodStatuses(ctx, mgr)
}

// Start makes every Watcher set up so far watch
// SecretProviderClassPodStatuses with mgr, then sets on: from then on
// SecretProviderClasses count. Called again, it does nothing. It returns
// the first watch's error.
func (w *Watch) Start(ctx context.Context, mgr ctrl.Manager, on *atomic.Bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching {
		return nil
	}
	for _, r := range w.watchers {
		if err := r.WatchPodStatuses(ctx, mgr); err != nil {
			return err
		}
	}
	w.watching = true
	on.Store(true)
	ctrl.LoggerFrom(ctx).Info("Watching Secrets Store CSI SecretProviderClassPodStatuses", "reconcilers", len(w.watchers))
	return nil
}
