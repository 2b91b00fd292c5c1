package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// What the reconciler asks of the waves, one call per phase: Inputs while
// it observes a workload, Take, Marks and Annotate while it acts on its
// decision, Recorded when it records what became of it.

// PendingRecheck is how often a workload waiting for a slot is looked at
// again even if no slot frees; slots freeing wake it sooner.
const PendingRecheck = time.Minute

// Content returns the content digest of a source as the reconciler's cache
// holds it now (sources.ContentDigest), "" for kinds of source other than
// ConfigMaps and Secrets; an error when it cannot be read.
type Content func(ctx context.Context, src refs.Source) (string, error)

// Inputs sets in in what the waves tell rollout.Decide of workload obj
// named key, whose sources in.Desired holds: that waves are on, whether a
// slot is free for it now (Input.Slot, see Free), and the halts that may
// hold its rollout (Input.Halts): the one it carries (see Marked), or else
// the failed rollouts in its namespace of its sources' content now. It
// returns the Warning causes found (a malformed priority, a failed rollout
// of obj), and an error when a source's content cannot be read. Nil Waves
// (off) set nothing.
func (w *Waves) Inputs(ctx context.Context, key Key, obj client.Object, in *rollout.Input, content Content) ([]record.Cause, error) {
	if w == nil {
		return nil, nil
	}
	var causes []record.Cause
	priority, err := PriorityOf(obj)
	if err != nil {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	}
	if p, reason, _, _ := w.progressOf(key, obj, in.Now); p == Failed {
		causes = append(causes, record.Cause{Reason: record.ReasonRolloutFailed, Note: fmt.Sprintf(
			"The rollout nudge started failed (%s); it halts the workloads waiting on the same change", reason)})
	}
	in.Waves, in.Slot = true, w.Free(key, priority)
	h, marked, err := Marked(ctx, obj, content)
	switch {
	case err != nil:
		return causes, err
	case marked:
		in.Halts = []rollout.Halt{h}
	default:
		in.Halts, err = w.haltsOf(ctx, key, obj.GetResourceVersion(), in.Desired.Entries, content)
	}
	return causes, err
}

// Marked returns the halt obj carries (HaltedAnnotation) as
// rollout.Input.Halts holds it, with its source's content now, read with
// content; ok is false when it carries none. A malformed one has no
// Digest: it holds nothing, and its removal is decided. It returns
// content's error.
func Marked(ctx context.Context, obj client.Object, content Content) (h rollout.Halt, ok bool, err error) {
	v, ok := obj.GetAnnotations()[HaltedAnnotation]
	if !ok {
		return rollout.Halt{}, false, nil
	}
	read, parsed := ParseHalt(v)
	if !parsed {
		return rollout.Halt{Marked: true}, true, nil
	}
	h = rollout.Halt{Source: read.Source, Digest: read.Digest, After: read.After, Marked: true}
	h.Now, err = content(ctx, read.Source)
	return h, true, err
}

// haltsOf returns the halts of the failed rollouts in key's namespace of
// the current content of the sources of entries, each read with content
// only when a failure of that source is remembered; none when a user
// removed the hold nudge wrote on key (its version is not the one nudge
// wrote the hold over).
func (w *Waves) haltsOf(ctx context.Context, key Key, version string, entries map[refs.Source]fingerprint.Entry, content Content) ([]rollout.Halt, error) {
	candidates := w.halting(key, version, entries)
	var out []rollout.Halt
	for _, src := range candidates {
		digest, err := content(ctx, src)
		if err != nil {
			return nil, err
		}
		if after, ok := w.failedAfter(key, src, digest); ok {
			out = append(out, rollout.Halt{Source: src, Digest: digest, Now: digest, After: after})
		}
	}
	return out, nil
}

// Take takes, just before the reconciler writes a rollout of workload obj
// named key, the slot rollout.Decide counted on (see Acquire). It returns
// false when the slot went to another workload meanwhile: the rollout must
// not be written, and is decided again.
func (w *Waves) Take(ctx context.Context, key Key, obj client.Object, now time.Time) bool {
	priority, _ := PriorityOf(obj)
	return w.Acquire(ctx, key, priority, now)
}

// Marks returns the annotations the write for decision d of obj sets or
// removes (nil) for the waves: for Halted, the hold (HaltedAnnotation)
// unless obj carries it already; for a decision that ends the hold obj
// carries (Decision.Unhalt), its removal. A Roll's are Annotate's.
func Marks(obj client.Object, d rollout.Decision) map[string]*string {
	v, carried := obj.GetAnnotations()[HaltedAnnotation]
	switch {
	case d.Action == rollout.Halted:
		if hold := formatHalt(d.Halt.Source, d.Halt.Digest, d.Halt.After); v != hold {
			return map[string]*string{HaltedAnnotation: &hold}
		}
	case d.Unhalt && carried:
		return map[string]*string{HaltedAnnotation: nil}
	}
	return nil
}

// Annotate adds to the annotations of the rollout decided by d on workload
// key the changed sources' content (RolledForAnnotation), marked for the
// rollout's time annotations[workload.LastRolloutAnnotation] (set it
// first), and the removal of the hold d ends (Decision.Unhalt). It returns
// an error when a source's content cannot be read. Nil Waves (off) add
// nothing.
func (w *Waves) Annotate(ctx context.Context, key Key, annotations map[string]*string, d rollout.Decision, content Content) error {
	if w == nil {
		return nil
	}
	var parts []string
	for _, src := range d.Changed {
		digest, err := content(ctx, src)
		if err != nil {
			return err
		}
		if digest != "" {
			parts = append(parts, src.String()+"="+digest)
		}
	}
	v := formatRolledFor(w.key, key, ptr.Deref(annotations[workload.LastRolloutAnnotation], ""), strings.Join(parts, " "))
	annotations[RolledForAnnotation] = &v
	if d.Unhalt {
		annotations[HaltedAnnotation] = nil
	}
	return nil
}

// Recorded records what became of decision d on workload obj named key,
// whose write went through (written) or not, obj having been at version
// over before: the rollout in flight, or its slot given back; the hold
// written or removed; a Pending workload's wait for a slot. It returns how
// long until obj should be looked at again while its rollout is in flight
// (for --rollout-timeout) or waits for a slot, 0 for no need.
func (w *Waves) Recorded(key Key, obj client.Object, d rollout.Decision, over string, written bool, now time.Time) time.Duration {
	if w == nil {
		return 0
	}
	w.hold(key, d.Action == rollout.Halted)
	switch {
	case d.Action == rollout.Roll && written:
		w.Rolled(key, over)
	case d.Action == rollout.Roll:
		w.Release(key) // not written: retried
	case d.Action == rollout.Halted && written:
		w.wroteHold(key, over)
	case d.Unhalt && written:
		w.unmark(key)
	case d.Action == rollout.Pending:
		priority, _ := PriorityOf(obj)
		w.Wait(key, priority)
		return PendingRecheck
	}
	if p, _, left, _ := w.progressOf(key, obj, now); p == Rolling && left > 0 {
		return left
	}
	return 0
}
