package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/memo"
	"nudge.dev/nudge/internal/workload"
)

// Apply is apply, for the tests of package controller_test.
func (r *Reconciler) Apply(ctx context.Context, obj client.Object, c workload.Change) error {
	return r.apply(ctx, obj, c)
}

// ClockSkew is memo.ClockSkew, for the tests of package controller_test.
const ClockSkew = memo.ClockSkew

// PhaseOf returns the reconcile phase ctx is of (see inPhase): "observe",
// "act" or "record", "" outside a reconcile.
func PhaseOf(ctx context.Context) string {
	p, _ := ctx.Value(phaseKey{}).(phase)
	return string(p)
}
