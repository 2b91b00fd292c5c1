package workload

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"nudge.dev/nudge/internal/eviction"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
	// RolloutsAnnotation records, for the storm brake, when nudge rolled the
	// workload: the last rollouts' times (as many as its budget), in Unix
	// seconds, comma-separated, oldest first (see FormatRollouts).
	RolloutsAnnotation = "nudge.dev/rollouts"
	// HeldAnnotation says, while a change waits for a maintenance window or
	// for the storm brake's budget, why and since when (see Held); the
	// rollout that ends the wait removes it.
	HeldAnnotation = "nudge.dev/held"
)

// FormatRollouts returns ts as RolloutsAnnotation holds them: Unix
// seconds, comma-separated, in the order given. A time within a second is
// written as the second after it (rounded up), so that the budget it takes
// frees no earlier than StormPeriod after the rollout itself.
func FormatRollouts(ts []time.Time) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		n := t.Unix()
		if t.Nanosecond() > 0 {
			n++
		}
		out[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(out, ",")
}

// ParseRollouts reads RolloutsAnnotation's value; an entry that is not a
// number of seconds is skipped (the brake then counts one rollout fewer,
// never more).
func ParseRollouts(v string) []time.Time {
	var out []time.Time
	for f := range strings.SplitSeq(v, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil && n > 0 {
			out = append(out, time.Unix(n, 0))
		}
	}
	return out
}

// Held is the value of HeldAnnotation: Reason (RolloutStorm or
// MaintenanceWindow) since Since until Until, for Sources. Its text form
// is "<reason> since <RFC 3339> until <RFC 3339>: <sources>".
type Held struct {
	Reason       string
	Since, Until time.Time
	Sources      string
}

// String returns h in HeldAnnotation's form.
func (h Held) String() string {
	return fmt.Sprintf("%s since %s until %s: %s", h.Reason, h.Since.UTC().Format(time.RFC3339), h.Until.UTC().Format(time.RFC3339), h.Sources)
}

// ParseHeld reads HeldAnnotation's value; ok is false when v is not in its
// form.
func ParseHeld(v string) (h Held, ok bool) {
	head, sources, ok := strings.Cut(v, ": ")
	if !ok {
		return Held{}, false
	}
	var since, until string
	if n, err := fmt.Sscanf(head, "%s since %s until %s", &h.Reason, &since, &until); err != nil || n != 3 {
		return Held{}, false
	}
	s, err1 := time.Parse(time.RFC3339, since)
	u, err2 := time.Parse(time.RFC3339, until)
	if err1 != nil || err2 != nil {
		return Held{}, false
	}
	h.Since, h.Until, h.Sources = s, u, sources
	return h, true
}

// Over returns the HeldAnnotation value that records h, a wait holding the
// workload now, over was, the value the workload carries: ok is false when
// was records it already (the same reason and end); begins says the wait
// begins (was records another reason, or none), so that its Event is
// recorded once per wait. A wait whose end moved keeps was's Since.
func (h Held) Over(was string) (value string, ok, begins bool) {
	before, parsed := ParseHeld(was)
	if parsed && before.Reason == h.Reason {
		if before.Until.Equal(h.Until.Truncate(time.Second)) {
			return "", false, false
		}
		h.Since = before.Since // the same wait, its end moved
		return h.String(), true, false
	}
	return h.String(), true, true
}

// EndHold sets in c, a rollout's or a baseline's write of a workload whose
// annotations are given, the end of the wait it carries (HeldAnnotation
// removed) and the rollout times the storm brake counts (rolled, as
// RolloutsAnnotation; removed when there are none to keep).
func (c *Change) EndHold(annotations map[string]string, rolled []time.Time) {
	if _, ok := annotations[HeldAnnotation]; ok {
		c.Annotations[HeldAnnotation] = nil
	}
	if len(rolled) > 0 {
		v := FormatRollouts(rolled)
		c.Annotations[RolloutsAnnotation] = &v
	} else if _, ok := annotations[RolloutsAnnotation]; ok {
		c.Annotations[RolloutsAnnotation] = nil
	}
}

// FieldManager is the field manager of every write nudge makes to a
// workload: the API server records, in the workload's managedFields, that
// nudge owns the applied state and the seal it wrote (see
// ownership.WrittenBackBy). It is also the user agent nudge's API client
// sends (app.RESTConfig), the manager older versions were recorded under.
const FieldManager = "nudge"

// CachedSealMark begins the selfLink of a workload in nudge's cache that
// carries a seal, followed by the seal: the cache transform (trim.Workload)
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

// SealChanged passes an update of a workload whose seal changed: of a
// workload's labels the cache keeps only the seal, and not as a label (see
// Seal).
func SealChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		was, had := Seal(e.ObjectOld)
		is, has := Seal(e.ObjectNew)
		return was != is || had != has
	}}
}

// Release returns the write that drops nudge's state from obj, a workload
// that no longer opts in, so that opting in again is first sight: a change
// made in between is baselined, not rolled. ok is false for a workload
// without state, which costs no write.
func Release(obj client.Object) (c Change, ok bool) {
	_, applied := obj.GetAnnotations()[AppliedAnnotation]
	if _, sealed := Seal(obj); !applied && !sealed {
		return Change{}, false
	}
	return Change{
		ResourceVersion: obj.GetResourceVersion(),
		Labels:          map[string]*string{SealLabel: nil},
		Annotations: map[string]*string{AppliedAnnotation: nil, LastRolloutAnnotation: nil,
			HeldAnnotation: nil, RolloutsAnnotation: nil, eviction.ProgressAnnotation: nil},
	}, true
}
