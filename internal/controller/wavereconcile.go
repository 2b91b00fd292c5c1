package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// Annotations of waves and halts (--max-concurrent-rollouts), on the
// workload's metadata.
const (
	// PriorityAnnotation orders the workloads waiting for a rollout slot:
	// an integer, higher first (e.g. "10" on canaries); 0 when unset.
	PriorityAnnotation = "nudge.dev/rollout-priority"
	// HaltedAnnotation holds a workload because a rollout of the same change
	// failed elsewhere: "<Kind>/<namespace>/<name>=<digest> <Kind>/<namespace>/<name>",
	// the source and its content digest (see RolledForAnnotation), then the
	// workload whose rollout failed. Removing it resumes the workload.
	HaltedAnnotation = "nudge.dev/halted"
	// RolledForAnnotation records, with each rollout while waves are on,
	// the changed sources and the content each rolled to:
	// "<Kind>/<namespace>/<name>=<key-id>.<digest> ...", where digest is the
	// keyed digest (fingerprint.Key.Source) of the whole source. A failure
	// of this rollout halts the workloads waiting on that content.
	RolledForAnnotation = "nudge.dev/rolled-for"
)

// Reasons of the Events of waves and halts.
const (
	// ReasonRolloutHalted: a workload is held because the rollout of the
	// same change failed on another workload.
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolloutFailed: a rollout nudge started failed; the rest of its
	// change is halted.
	ReasonRolloutFailed = "RolloutFailed"
)

// pendingRecheck is how often a workload waiting for a slot is looked at
// again even if no slot frees; slots freeing wake it sooner.
const pendingRecheck = time.Minute

func (r *Reconciler) waveKey(n types.NamespacedName) waveKey { return waveKey{r.Kind.Name(), n} }

// wave decides again, with waves on, a decision d that Decide took on in:
// it adds the hold (nudge.dev/halted, or a failed rollout of the same
// change) and, when the change would roll, asks for a slot. It returns the
// decision, the Warning causes found (a malformed priority, a failed
// rollout, a hold) and, for Halted, the hold.
func (r *Reconciler) wave(ctx context.Context, obj client.Object, in *rollout.Input, d rollout.Decision) (rollout.Decision, []cause, waveHold, error) {
	key := r.waveKey(client.ObjectKeyFromObject(obj))
	var causes []cause
	priority, err := priorityOf(obj)
	if err != nil {
		causes = append(causes, cause{reason: ReasonMalformedAnnotation, note: err.Error()})
	}
	if p, reason, _ := ProgressOf(obj, in.Now, r.Waves.timeout); p == Failed && obj.GetAnnotations()[RolledForAnnotation] != "" {
		causes = append(causes, cause{reason: ReasonRolloutFailed, note: fmt.Sprintf(
			"The rollout nudge started failed (%s); it halts the workloads waiting on the same change", reason)})
	}
	var after string
	if v, ok := obj.GetAnnotations()[HaltedAnnotation]; ok {
		in.Halted = v
		if h, ok := ParseHalt(v); ok {
			in.Halted, in.HaltedSource, after = h.Digest, h.Source, h.After
			if in.HaltedNow, err = r.contentDigest(ctx, h.Source); err != nil {
				return d, causes, waveHold{}, err
			}
		}
	} else if len(d.Changed) > 0 {
		changed := map[refs.Source]string{}
		for _, src := range d.Changed {
			if changed[src], err = r.contentDigest(ctx, src); err != nil {
				return d, causes, waveHold{}, err
			}
		}
		if src, h, ok := r.Waves.haltFor(key, obj.GetResourceVersion(), changed); ok {
			in.Halted, in.HaltedSource, in.HaltedNow, after = h.Digest, src, h.Digest, h.After
		}
	}
	in.Waves, in.Slot = true, true
	d = rollout.Decide(*in)
	var hold waveHold
	switch d.Action {
	case rollout.Halted:
		causes = append(causes, cause{reason: ReasonRolloutHalted, note: fmt.Sprintf(
			"Halted the rollout for %s %s/%s: the rollout of %s for the same content failed. It resumes when %s changes again, or when the annotation %s is removed",
			in.HaltedSource.Kind, in.HaltedSource.Namespace, in.HaltedSource.Name, after, in.HaltedSource.Name, HaltedAnnotation)})
		hold = waveHold{value: formatHalt(in.HaltedSource, in.Halted, after), after: after}
	case rollout.Roll:
		if !r.Waves.acquire(ctx, key, priority, in.Now) {
			in.Slot = false
			d = rollout.Decide(*in)
		}
	}
	return d, causes, hold, nil
}

// waveHold is a hold to write: HaltedAnnotation's value, and the workload
// whose rollout failed ("Deployment shop/web").
type waveHold struct{ value, after string }

// afterWave does, after act, what decision d taken with waves on still
// asks: writes or removes the hold, records the rollout or gives its slot
// back (obj was at version over before act), and asks to be called back
// while a rollout is in flight (for --rollout-timeout) or pending.
func (r *Reconciler) afterWave(ctx context.Context, obj client.Object, d rollout.Decision, hold waveHold, over string, result ctrl.Result) (ctrl.Result, error) {
	key := r.waveKey(client.ObjectKeyFromObject(obj))
	r.Waves.hold(key, d.Action == rollout.Halted)
	switch {
	case d.Action == rollout.Roll && obj.GetResourceVersion() != over:
		r.Waves.rolled(key, over)
	case d.Action == rollout.Roll:
		r.Waves.release(key) // not written: retried
	case d.Action == rollout.Halted && obj.GetAnnotations()[HaltedAnnotation] != hold.value:
		c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{HaltedAnnotation: &hold.value}}
		if err := r.apply(ctx, obj, c); err != nil {
			return r.retry(ctx, err)
		}
		r.Waves.wroteHold(key, over)
		ctrl.LoggerFrom(ctx).Info("Halted rollout of "+r.Kind.Name(), "kind", r.Kind.Name(), "sources", names(d.Changed), "halt", hold.value)
		if r.Notify != nil {
			r.Notify(Rolled{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Sources: d.Changed, Time: r.now(),
				Halted: "the rollout of " + hold.after + " for the same change failed"})
		}
	case d.Unhalt && d.Action != rollout.Roll:
		if _, ok := obj.GetAnnotations()[HaltedAnnotation]; ok {
			c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{HaltedAnnotation: nil}}
			if err := r.apply(ctx, obj, c); err != nil {
				return r.retry(ctx, err)
			}
			r.Waves.unmark(key)
		}
	}
	after := time.Duration(0)
	if p, _, left := ProgressOf(obj, r.now(), r.Waves.timeout); p == Rolling && left > 0 {
		after = left
	}
	if d.Action == rollout.Pending {
		after = pendingRecheck
	}
	if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
		result.RequeueAfter = after
	}
	return result, nil
}

// afterWaveError gives back the slot taken for a rollout that act could not
// write (obj still at version over); the retry asks for one again.
func (r *Reconciler) afterWaveError(obj client.Object, d rollout.Decision, over string) {
	if d.Action == rollout.Roll && obj.GetResourceVersion() == over {
		r.Waves.release(r.waveKey(client.ObjectKeyFromObject(obj)))
	}
}

// waveAnnotations adds to the annotations of the rollout decided by d the
// changed sources' content (RolledForAnnotation) and, when the hold has
// ended, the hold's removal.
func (r *Reconciler) waveAnnotations(ctx context.Context, annotations map[string]*string, d rollout.Decision) error {
	var parts []string
	for _, src := range d.Changed {
		digest, err := r.contentDigest(ctx, src)
		if err != nil {
			return err
		}
		if digest != "" {
			parts = append(parts, src.String()+"="+digest)
		}
	}
	v := strings.Join(parts, " ")
	annotations[RolledForAnnotation] = &v
	if d.Unhalt {
		annotations[HaltedAnnotation] = nil
	}
	return nil
}

// expectWave ranks the workloads a source change is about to reconcile (see
// Waves.expect).
func (r *Reconciler) expectWave(ctx context.Context, reqs []reconcile.Request) {
	if r.Waves == nil {
		return
	}
	for _, req := range reqs {
		obj := r.Kind.New()
		if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
			continue
		}
		priority, _ := priorityOf(obj)
		r.Waves.expect(r.waveKey(req.NamespacedName), priority)
	}
}

// contentDigest returns ContentDigest of src as the cache holds it now, ""
// for kinds of source other than ConfigMaps and Secrets.
func (r *Reconciler) contentDigest(ctx context.Context, src refs.Source) (string, error) {
	if src.Kind != refs.ConfigMap && src.Kind != refs.Secret {
		return "", nil
	}
	obj, err := r.resolver().getSource(ctx, src)
	switch {
	case apierrors.IsNotFound(err):
		return ContentDigest(r.Key, src, nil), nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", src, err)
	}
	return ContentDigest(r.Key, src, obj), nil
}

// ContentDigest returns "<key-id>.<digest>", the keyed digest
// (fingerprint.Key.Source) of the whole content of src, a ConfigMap or
// Secret read digested (see DigestSource), or "absent" when obj is nil (it
// does not exist). It is the form of RolledForAnnotation and
// HaltedAnnotation.
func ContentDigest(key fingerprint.Key, src refs.Source, obj client.Object) string {
	if obj == nil {
		return "absent"
	}
	return key.ID() + "." + key.Source(refs.Reference{Source: src}, digestsOf(obj))
}

// priorityOf returns obj's PriorityAnnotation, 0 when unset; an error says
// why a malformed one counts as 0.
func priorityOf(obj client.Object) (int, error) {
	v, ok := obj.GetAnnotations()[PriorityAnnotation]
	if !ok {
		return 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("annotation %s: want an integer such as \"10\", got %q; counting it as 0", PriorityAnnotation, v)
	}
	return p, nil
}

// sourceDigest is one entry of RolledForAnnotation.
type sourceDigest struct {
	source refs.Source
	digest string
}

// parseDigests reads RolledForAnnotation's value; malformed entries are
// left out.
func parseDigests(v string) []sourceDigest {
	var out []sourceDigest
	for _, f := range strings.Fields(v) {
		ident, digest, ok := strings.Cut(f, "=")
		parts := strings.Split(ident, "/")
		if !ok || digest == "" || len(parts) != 3 {
			continue
		}
		out = append(out, sourceDigest{refs.Source{Kind: refs.Kind(parts[0]), Namespace: parts[1], Name: parts[2]}, digest})
	}
	return out
}

// Halt is a HaltedAnnotation's value, read.
type Halt struct {
	// Source is the source whose content the workload is held for, and
	// Digest that content (see ContentDigest).
	Source refs.Source
	Digest string
	// After is the workload whose rollout of that content failed, e.g.
	// "Deployment shop/canary".
	After string
}

// formatHalt renders HaltedAnnotation's value.
func formatHalt(src refs.Source, digest, after string) string {
	return src.String() + "=" + digest + " " + strings.Replace(after, " ", "/", 1)
}

// ParseHalt reads a HaltedAnnotation's value, as formatHalt writes it; ok is
// false when it cannot (a malformed hold holds nothing, and nudge removes it).
func ParseHalt(v string) (h Halt, ok bool) {
	first, failed, _ := strings.Cut(strings.TrimSpace(v), " ")
	sds := parseDigests(first)
	if len(sds) != 1 {
		return Halt{}, false
	}
	return Halt{Source: sds[0].source, Digest: sds[0].digest, After: strings.Replace(failed, "/", " ", 1)}, true
}
