package resolve

import (
	"context"
	"fmt"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/rollout"
)

// Pause returns what pauses every rollout of a workload in namespace whose
// dialect spec is given (rollout.Input.PausedBy): its own nudge.dev/paused
// (dialect.Spec.Paused), else its Namespace's (with Pace.NamespaceMarks,
// read from the Reader's Namespace metadata); the zero Pause for none. The
// Namespace is read only when the workload is not paused itself.
//
// A Namespace's value that is neither "true" nor "false" pauses nothing,
// and is returned wrapping ErrMalformedPause, as a workload's malformed one
// was reported by dialect.Parse: a pause is a hold whose lift is its
// owner's to make, and a value nobody can read would hold changes with no
// one having decided it. It returns the Reader's error but NotFound.
func (r Resolver) Pause(ctx context.Context, namespace string, spec dialect.Spec) (rollout.Pause, error) {
	if spec.Paused {
		return rollout.PausedWorkload, nil
	}
	if !r.NamespaceMarks {
		return "", nil
	}
	v, ok, err := r.namespaceAnnotation(ctx, namespace, dialect.NudgePaused)
	if err != nil || !ok {
		return "", err
	}
	paused, err := dialect.Paused(map[string]string{dialect.NudgePaused: v})
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: namespace %s: %w; the namespace counts as not paused", ErrMalformedPause, namespace, err)
	case paused:
		return rollout.PausedNamespace, nil
	}
	return "", nil
}
