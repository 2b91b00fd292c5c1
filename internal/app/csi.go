package app

import (
	"context"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/apidiscovery"
	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/options"
)

// csiWatch is csi.Watch over the manager's context (for the logger and the
// watches) and the reconcilers' CSI flag, on.
type csiWatch struct {
	ctx   context.Context
	mgr   ctrl.Manager
	on    *atomic.Bool
	watch csi.Watch
}

// setup sets r up with w's manager under w's watch (see csi.Watch.Setup).
func (w *csiWatch) setup(ctx context.Context, r *controller.Reconciler, copts controller.Options) error {
	return w.watch.Setup(w.ctx, w.mgr, r, func() error { return r.SetupWithManager(ctx, w.mgr, copts) })
}

// setupCSI starts w once the API serves SecretProviderClassPodStatuses, with
// --enable-csi-integration; without it, nothing is watched and
// SecretProviderClasses count for nothing.
func setupCSI(ctx context.Context, opts options.Options, w *csiWatch, kinds *apidiscovery.Kinds) error {
	if !opts.Reloader.EnableCSIIntegration {
		return nil
	}
	return kinds.When(ctx, csi.PodStatusGVK, false, func(string) error { return w.watch.Start(w.ctx, w.mgr, w.on) })
}
