package record

import "nudge.dev/nudge/internal/eviction"

// Reasons of the Events nudge records. They are API: alerts and dashboards
// match on them, and nudge_warnings_total counts Warnings by them.
const (
	// ReasonRolled (Normal): nudge rolled a workload.
	ReasonRolled = "Rolled"
	// ReasonRolloutStorm: the workload had its budget of rollouts in the
	// last hour (--max-rollouts-per-hour); its next rollout waits until the
	// budget frees. Recorded once per hold.
	ReasonRolloutStorm = "RolloutStorm"
	// ReasonRolloutDeferred (Normal): a change waits for the workload's
	// maintenance window to open. Recorded once per wait.
	ReasonRolloutDeferred = "RolloutDeferred"
	// ReasonProducerNotReady: a changed Secret's producer (an
	// ExternalSecret, a cert-manager Certificate) was not ready within
	// --producer-ready-timeout; nudge rolled anyway.
	ReasonProducerNotReady = "ProducerNotReady"
	// ReasonReloaded (Normal) is Reloader's ReasonRolled, recorded instead
	// with --event-reasons=reloader (Reloader 1.4,
	// internal/pkg/handler/upgrade.go).
	ReasonReloaded = "Reloaded"
	// ReasonReloadFail is Reloader's Warning for a rollout write that
	// failed, recorded with --event-reasons=reloader only, at each failure.
	ReasonReloadFail = "ReloadFail"
	// ReasonSourceMissing: a source the workload references does not exist.
	ReasonSourceMissing = "SourceMissing"
	// ReasonWorkloadRefMissing: the workload an Argo Rollout's
	// spec.workloadRef names does not exist, or is not an apps/v1
	// Deployment: nudge cannot read its pod template, and rolls nothing.
	ReasonWorkloadRefMissing = "WorkloadRefMissing"
	// ReasonMalformedAnnotation: an annotation of a dialect could not be read.
	ReasonMalformedAnnotation = eviction.ReasonMalformed
	// ReasonNamespaceNotWatched: a source is in a namespace nudge does not
	// watch.
	ReasonNamespaceNotWatched = "NamespaceNotWatched"
	// ReasonCrossNamespaceRefused: a workload names a source in another
	// namespace, and nudge refuses such references
	// (--cross-namespace-references=deny); the source counts for nothing.
	ReasonCrossNamespaceRefused = "CrossNamespaceRefused"
	// ReasonOverrideRefused: a workload's annotation would loosen a limit
	// a flag sets (--rollout-window, --max-rollouts-per-hour) and
	// --allow-workload-overrides is off; the flag's value is used.
	ReasonOverrideRefused = "OverrideRefused"
	// ReasonRolloutHeld: a change waits for a missing required source.
	ReasonRolloutHeld = "RolloutHeld"
	// ReasonJobNotStarted: a CronJob's Job could not be started
	// (--cronjob-start-job).
	ReasonJobNotStarted = "JobNotStarted"
	// ReasonJobNotRecreated: a Job nudge re-creates cannot be created: the
	// API server refuses it, and nudge keeps the Job, or the create failed
	// after the delete; nudge keeps trying (see jobs.Recreator).
	ReasonJobNotRecreated = "JobNotRecreated"
	// ReasonStateRestored: someone wrote back a state nudge had replaced
	// (see ownership.WrittenBackBy); nudge does not act on it.
	ReasonStateRestored = "StateRestored"
	// ReasonStateContested: another nudge, with another fingerprint key,
	// keeps replacing the state this one writes on a workload; this one
	// stops writing it for a while (see ownership.Takeovers).
	ReasonStateContested = "StateContested"
	// ReasonRolloutHalted: a workload is held because the rollout of the
	// same change failed on another workload (see fleet.Waves).
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolloutFailed: a rollout nudge started failed; the rest of its
	// change is halted.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonEvictionBlocked: a PodDisruptionBudget refused the eviction of
	// a pod of a restart through the Eviction API; the note names it, and
	// the eviction is tried again with backoff.
	ReasonEvictionBlocked = eviction.ReasonBlocked
	// ReasonRestartHalted: a restart through the Eviction API halted, a
	// replacement pod not Ready within --rollout-timeout.
	ReasonRestartHalted = eviction.ReasonHalted
	// ReasonEvictionOff: a workload asks for restarts through the Eviction
	// API (nudge.dev/rollout-strategy "evict") while nudge runs without
	// --enable-eviction; only its template is changed.
	ReasonEvictionOff = eviction.ReasonOff
)

// Cause is one reason a workload deserves a Warning: an Event's reason and
// its note.
type Cause struct {
	Reason string
	Note   string
}
