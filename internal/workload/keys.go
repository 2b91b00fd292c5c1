package workload

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations nudge writes on a workload. On its metadata: the
// applied state, its seal (a label, see fingerprint.Key.Seal) and the time
// of the last rollout. On the pod template: the trigger.
const (
	// SealLabel is a keyed check of the applied state nudge wrote last
	// (fingerprint.Key.Seal). Labels do not travel to ReplicaSets and back,
	// annotations do, so a state whose seal does not match is one nudge did
	// not write (kubectl rollout undo).
	SealLabel = "nudge.dev/seal"
	// AppliedAnnotation holds the digests the workload's pods run with, in
	// the format of fingerprint.State.Format.
	AppliedAnnotation = "nudge.dev/applied-fingerprint"
	// LastRolloutAnnotation is when nudge last rolled the workload, in RFC
	// 3339 with nanoseconds.
	LastRolloutAnnotation = "nudge.dev/last-rollout"
	// RestartedAtAnnotation and RestartedForAnnotation are the default
	// trigger, on the pod template: the time of the rollout (RFC 3339 with
	// nanoseconds) and the sources that changed ("ConfigMap shop/app, ...").
	RestartedAtAnnotation  = "nudge.dev/restarted-at"
	RestartedForAnnotation = "nudge.dev/restarted-for"
)

// FieldManager is the field manager of every write nudge makes to a
// workload: the API server records, in the workload's managedFields, that
// nudge owns the applied state and the seal it wrote (see
// ownership.WrittenBackBy). It is also the user agent nudge's API client
// sends (app.RESTConfig), the manager older versions were recorded under.
const FieldManager = "nudge"

// CachedSealMark begins the selfLink of a workload in nudge's cache that
// carries a seal, followed by the seal: the cache transform (retained.Workload)
// moves the SealLabel there and drops the labels, a string where the label
// took a map of its own (about 340 bytes a workload). selfLink is
// deprecated because the API server no longer sets it, which makes it a
// field no real object carries; the transform clears any other value. Read
// the seal with Seal.
const CachedSealMark = "nudge:seal:"

// Seal returns obj's seal: its SealLabel as the API server serves it, or
// the copy nudge's cache keeps (CachedSealMark); ok is false when it has
// none.
func Seal(obj metav1.Object) (seal string, ok bool) {
	if seal, ok := obj.GetLabels()[SealLabel]; ok {
		return seal, true
	}
	return strings.CutPrefix(obj.GetSelfLink(), CachedSealMark)
}
