package rollout

import (
	"slices"

	"nudge.dev/nudge/internal/refs"
)

// Pause says what pauses every rollout of a workload: nudge.dev/paused
// "true" on the workload itself or on its Namespace. The zero Pause pauses
// nothing.
type Pause string

// The pauses of a workload, in Input.PausedBy.
const (
	// PausedWorkload: the workload carries nudge.dev/paused "true".
	PausedWorkload Pause = "Workload"
	// PausedNamespace: its Namespace does (and the workload does not).
	PausedNamespace Pause = "Namespace"
)

// Pauses is the part of Input that says what is paused.
type Pauses struct {
	// PausedBy, when not zero, holds every rollout of the workload: a
	// change that would roll (or wait for its burst to end) is Paused
	// instead.
	PausedBy Pause
	// PausedSources lists the sources marked nudge.dev/paused "true": a
	// change of them alone is Paused. A change of another source rolls,
	// and the new pods then read every source as it is, a paused one's new
	// content too: the rollout records it, so lifting the pause rolls
	// nothing more.
	PausedSources []refs.Source
}

// pauses reports whether changed, the sources whose change would roll,
// are held by a pause: the workload's or its Namespace's, or each one's
// own.
func (p Pauses) pauses(changed []refs.Source) bool {
	if p.PausedBy != "" {
		return true
	}
	return len(changed) > 0 && !slices.ContainsFunc(changed, func(s refs.Source) bool { return !slices.Contains(p.PausedSources, s) })
}
