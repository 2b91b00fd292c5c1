package resolve

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/maintenance"
	"nudge.dev/nudge/internal/rollout"
)

// Maintenance returns the maintenance window of a workload in namespace
// whose dialect spec is given (rollout.Input.Maintenance): its own
// nudge.dev/maintenance-window, else its Namespace's (with
// Pace.NamespaceWindows, read from the Reader's Namespace metadata), else
// --maintenance-window; nil for none. A malformed annotation is no window,
// so the workload rolls as if it had none: the workload's own was reported
// by dialect.Parse, a Namespace's is returned wrapping ErrMalformedWindow
// with a nil Schedule. It returns the Reader's error but NotFound.
func (r Resolver) Maintenance(ctx context.Context, namespace string, spec dialect.Spec) (rollout.Schedule, error) {
	w := r.Pace.Maintenance
	switch {
	case spec.Maintenance != nil:
		w = *spec.Maintenance
	case r.NamespaceWindows:
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		// Read, not changed: from a cache, the cached object itself.
		err := r.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns, client.UnsafeDisableDeepCopy)
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
		}
		if v, ok := ns.GetAnnotations()[dialect.NudgeMaintenanceWindow]; ok {
			parsed, err := maintenance.Parse(v)
			if err != nil {
				return nil, fmt.Errorf("%w: annotation %s of namespace %s, %q: %w; rolling as if there were none",
					ErrMalformedWindow, dialect.NudgeMaintenanceWindow, namespace, v, err)
			}
			w = parsed
		}
	}
	if w.IsZero() {
		return nil, nil
	}
	return w, nil
}
