package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// PendingRecheck is how often a workload waiting for a slot is looked at
// again even if no slot frees; slots freeing wake it sooner.
const PendingRecheck = time.Minute

// Content returns the content digest of a source as the reconciler's cache
// holds it now (sources.ContentDigest), "" for kinds of source other than
// ConfigMaps and Secrets; an error when it cannot be read.
type Content func(ctx context.Context, src refs.Source) (string, error)

// Writer writes a change to a workload; obj's metadata is updated from the
// response.
type Writer func(ctx context.Context, obj client.Object, c workload.Change) error

// Hold is a hold to write: HaltedAnnotation's value, and the workload whose
// rollout failed ("Deployment shop/web").
type Hold struct{ Value, After string }

// Decide decides again, with waves on, a decision d that rollout.Decide took
// on in, for workload obj named key: it adds the hold (nudge.dev/halted, or
// a failed rollout of the same change) and, when the change would roll, asks
// for a slot. It returns the decision, the Warning causes found (a
// malformed priority, a failed rollout, a hold) and, for Halted, the hold.
// It returns an error when a source's content cannot be read.
func (w *Waves) Decide(ctx context.Context, key Key, obj client.Object, in *rollout.Input, d rollout.Decision, content Content) (rollout.Decision, []record.Cause, Hold, error) {
	var causes []record.Cause
	priority, err := PriorityOf(obj)
	if err != nil {
		causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: err.Error()})
	}
	if p, reason, _, _ := w.progressOf(key, obj, in.Now); p == Failed {
		causes = append(causes, record.Cause{Reason: record.ReasonRolloutFailed, Note: fmt.Sprintf(
			"The rollout nudge started failed (%s); it halts the workloads waiting on the same change", reason)})
	}
	var after string
	if v, ok := obj.GetAnnotations()[HaltedAnnotation]; ok {
		in.Halted = v
		if h, ok := ParseHalt(v); ok {
			in.Halted, in.HaltedSource, after = h.Digest, h.Source, h.After
			if in.HaltedNow, err = content(ctx, h.Source); err != nil {
				return d, causes, Hold{}, err
			}
		}
	} else if len(d.Changed) > 0 {
		changed := map[refs.Source]string{}
		for _, src := range d.Changed {
			if changed[src], err = content(ctx, src); err != nil {
				return d, causes, Hold{}, err
			}
		}
		if src, h, ok := w.haltFor(key, obj.GetResourceVersion(), changed); ok {
			in.Halted, in.HaltedSource, in.HaltedNow, after = h.Digest, src, h.Digest, h.After
		}
	}
	in.Waves, in.Slot = true, true
	d = rollout.Decide(*in)
	var hold Hold
	switch d.Action {
	case rollout.Halted:
		causes = append(causes, record.Cause{Reason: record.ReasonRolloutHalted, Note: fmt.Sprintf(
			"Halted the rollout for %s %s/%s: the rollout of %s for the same content failed. It resumes when %s changes again, or when the annotation %s is removed",
			in.HaltedSource.Kind, in.HaltedSource.Namespace, in.HaltedSource.Name, after, in.HaltedSource.Name, HaltedAnnotation)})
		hold = Hold{Value: formatHalt(in.HaltedSource, in.Halted, after), After: after}
	case rollout.Roll:
		if !w.Acquire(ctx, key, priority, in.Now) {
			in.Slot = false
			d = rollout.Decide(*in)
		}
	}
	return d, causes, hold, nil
}

// After does, once the reconciler carried out decision d on obj (at version
// over before), what waves still ask: it writes (with write) or removes the
// hold, records the rollout or gives its slot back, and returns how long
// until obj should be looked at again while its rollout is in flight (for
// --rollout-timeout) or pending, 0 for no need. halted reports that it wrote
// the hold. It returns write's error.
func (w *Waves) After(ctx context.Context, key Key, obj client.Object, d rollout.Decision, hold Hold, over string, now time.Time, write Writer) (requeue time.Duration, halted bool, err error) {
	w.hold(key, d.Action == rollout.Halted)
	switch {
	case d.Action == rollout.Roll && obj.GetResourceVersion() != over:
		w.Rolled(key, over)
	case d.Action == rollout.Roll:
		w.Release(key) // not written: retried
	case d.Action == rollout.Halted && obj.GetAnnotations()[HaltedAnnotation] != hold.Value:
		c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{HaltedAnnotation: &hold.Value}}
		if err := write(ctx, obj, c); err != nil {
			return 0, false, err
		}
		w.wroteHold(key, over)
		halted = true
	case d.Unhalt && d.Action != rollout.Roll:
		if _, ok := obj.GetAnnotations()[HaltedAnnotation]; ok {
			c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{HaltedAnnotation: nil}}
			if err := write(ctx, obj, c); err != nil {
				return 0, false, err
			}
			w.unmark(key)
		}
	}
	if p, _, left, _ := w.progressOf(key, obj, now); p == Rolling && left > 0 {
		requeue = left
	}
	if d.Action == rollout.Pending {
		requeue = PendingRecheck
	}
	return requeue, halted, nil
}

// NotWritten gives back the slot taken for a rollout the reconciler could
// not write (obj still at version over); the retry asks for one again.
func (w *Waves) NotWritten(key Key, obj client.Object, d rollout.Decision, over string) {
	if d.Action == rollout.Roll && obj.GetResourceVersion() == over {
		w.Release(key)
	}
}

// Annotate adds to the annotations of the rollout decided by d on workload
// key the changed sources' content (RolledForAnnotation), marked for the
// rollout's time annotations[workload.LastRolloutAnnotation] (set it
// first), and, when the hold has ended, the hold's removal. It returns an
// error when a source's content cannot be read.
func (w *Waves) Annotate(ctx context.Context, key Key, annotations map[string]*string, d rollout.Decision, content Content) error {
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
