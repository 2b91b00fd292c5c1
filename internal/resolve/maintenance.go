package resolve

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/maintenance"
	"nudge.dev/nudge/internal/rollout"
)

// Maintenance returns the maintenance window of a workload in namespace
// whose dialect spec is given (rollout.Input.Maintenance); nil for none.
// Three windows may apply: --maintenance-window, the Namespace's
// nudge.dev/maintenance-window (with Pace.NamespaceMarks, read from the
// Reader's Namespace metadata) and the workload's own.
//
// By default each narrows the others: the workload may roll when every one
// set is open (Within, the flag's first), so an annotation never opens a
// window the flag keeps closed. With Pace.Overrides the workload's own
// replaces the Namespace's, which replaces the flag's, as before
// --allow-workload-overrides.
//
// A malformed annotation is no window: the workload's own was reported by
// dialect.Parse, a Namespace's is returned wrapping ErrMalformedWindow. By
// default the other windows still apply; with Pace.Overrides a malformed
// window that would replace the others leaves none, so the workload rolls
// as if it had none (a rollout is never lost to a typo). It returns the
// Reader's error but NotFound.
func (r Resolver) Maintenance(ctx context.Context, namespace string, spec dialect.Spec) (rollout.Schedule, error) {
	var own maintenance.Window
	if spec.Maintenance != nil {
		own = *spec.Maintenance
	}
	var ns maintenance.Window
	var malformed error
	if r.NamespaceMarks && (spec.Maintenance == nil || !r.Overrides) {
		var err error
		ns, err = r.namespaceWindow(ctx, namespace)
		switch {
		case err == nil:
		case errors.Is(err, ErrMalformedWindow):
			malformed = err
		default:
			return nil, err
		}
	}
	var set []rollout.Schedule
	if r.Overrides {
		w := r.Pace.Maintenance
		switch {
		case spec.Maintenance != nil:
			w = own
		case malformed != nil:
			w = maintenance.Window{}
		case !ns.IsZero():
			w = ns
		}
		if !w.IsZero() {
			set = append(set, w)
		}
	} else {
		for _, w := range []maintenance.Window{r.Pace.Maintenance, ns, own} {
			if !w.IsZero() {
				set = append(set, w)
			}
		}
	}
	if len(set) == 0 {
		return nil, malformed
	}
	return Within(set...), malformed
}

// namespaceWindow returns the nudge.dev/maintenance-window of namespace, the
// zero Window when it has none or does not exist; an error wrapping
// ErrMalformedWindow when it cannot be read, or the Reader's.
func (r Resolver) namespaceWindow(ctx context.Context, namespace string) (maintenance.Window, error) {
	v, ok, err := r.namespaceAnnotation(ctx, namespace, dialect.NudgeMaintenanceWindow)
	if err != nil || !ok {
		return maintenance.Window{}, err
	}
	w, err := maintenance.Parse(v)
	if err != nil {
		return maintenance.Window{}, fmt.Errorf("%w: annotation %s of namespace %s, %q: %w; the namespace counts as having none",
			ErrMalformedWindow, dialect.NudgeMaintenanceWindow, namespace, v, err)
	}
	return w, nil
}

// namespaceAnnotation returns the annotation key of namespace, ok false
// when it has none or does not exist; the Reader's error but NotFound.
func (r Resolver) namespaceAnnotation(ctx context.Context, namespace, key string) (v string, ok bool, err error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	// Read, not changed: from a cache, the cached object itself.
	err = r.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns, client.UnsafeDisableDeepCopy)
	if client.IgnoreNotFound(err) != nil {
		return "", false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	v, ok = ns.GetAnnotations()[key]
	return v, ok, nil
}
