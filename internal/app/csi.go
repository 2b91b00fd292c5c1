package app

import (
	"context"
	"sync"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/sources"
)

// csiWatch wires Reloader's --enable-csi-integration: once the API serves
// the Secrets Store CSI driver's SecretProviderClassPodStatuses, every
// workload reconciler, including those set up later (Argo Rollouts), also
// watches them, and only then do SecretProviderClasses count (on).
type csiWatch struct {
	ctx context.Context // the manager's: for the logger and the watches
	mgr ctrl.Manager
	on  *atomic.Bool

	mu          sync.Mutex
	reconcilers []*controller.Reconciler
	watching    bool
}

// setup sets r up with w's manager and adds it (see add). It holds w's
// lock throughout: a controller set up once the flag is on watches the pod
// statuses from its start (see controller.Reconciler.WatchPodStatuses),
// and one set up before start has begun is among those start watches with.
func (w *csiWatch) setup(ctx context.Context, r *controller.Reconciler, copts controller.Options) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := r.SetupWithManager(ctx, w.mgr, copts); err != nil {
		return err
	}
	return w.add(r)
}

// add makes r watch SecretProviderClassPodStatuses, now if they are served,
// otherwise once they are; w's lock held.
func (w *csiWatch) add(r *controller.Reconciler) error {
	w.reconcilers = append(w.reconcilers, r)
	if !w.watching {
		return nil
	}
	return r.WatchPodStatuses(w.ctx, w.mgr)
}

// start makes every reconciler added so far watch
// SecretProviderClassPodStatuses, then turns SecretProviderClasses on.
func (w *csiWatch) start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching {
		return nil
	}
	for _, r := range w.reconcilers {
		if err := r.WatchPodStatuses(w.ctx, w.mgr); err != nil {
			return err
		}
	}
	w.watching = true
	w.on.Store(true)
	ctrl.LoggerFrom(w.ctx).Info("Watching Secrets Store CSI SecretProviderClassPodStatuses", "reconcilers", len(w.reconcilers))
	return nil
}

// setupCSI starts w once the API serves SecretProviderClassPodStatuses, with
// --enable-csi-integration; without it, nothing is watched and
// SecretProviderClasses count for nothing.
func setupCSI(ctx context.Context, opts options.Options, w *csiWatch, kinds *servedKinds) error {
	if !opts.Reloader.EnableCSIIntegration {
		return nil
	}
	return kinds.when(ctx, sources.PodStatusGVK, false, func(string) error { return w.start() })
}
