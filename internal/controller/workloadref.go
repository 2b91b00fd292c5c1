package controller

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// unreferenced returns the Warning of err, the failure to read the pod
// template of obj from the workload its spec.workloadRef names (see
// workload.TemplateOf): a workload that does not exist, or of a kind nudge
// does not read, is warned about (WorkloadRefMissing, once per cause) when
// obj's own annotations opt it in, and nothing is rolled; its event or the
// Deployment's creation reconciles obj again. Any other error is returned,
// to be retried; neither for none.
func (r *Reconciler) unreferenced(obj client.Object, err error) ([]record.Cause, error) {
	if err == nil {
		return nil, nil
	}
	if !apierrors.IsNotFound(err) && !errors.Is(err, workload.ErrRefKind) {
		return nil, err
	}
	if spec, _ := r.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), nil); spec.Enabled(r.AutoReloadAll) {
		return []record.Cause{{Reason: record.ReasonWorkloadRefMissing, Note: err.Error() + "; nudge rolls nothing until it can read it"}}, nil
	}
	return nil, nil
}
