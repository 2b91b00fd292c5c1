package controller

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// unreferenced handles err, the failure to read the pod template of obj
// from the workload its spec.workloadRef names (see workload.TemplateOf):
// a workload that does not exist, or of a kind nudge does not read, is
// warned about (WorkloadRefMissing, once per cause) when obj's own
// annotations opt it in, and nothing is rolled; its event or the
// Deployment's creation reconciles obj again. Any other error is returned,
// to be retried; nil is returned for none.
func (r *Reconciler) unreferenced(ctx context.Context, obj client.Object, err error) error {
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) && !errors.Is(err, workload.ErrRefKind) {
		return err
	}
	if spec, _ := r.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), nil); spec.Enabled(r.AutoReloadAll) {
		r.warn(ctx, obj, []record.Cause{{Reason: record.ReasonWorkloadRefMissing, Note: err.Error() + "; nudge rolls nothing until it can read it"}})
	}
	return nil
}
