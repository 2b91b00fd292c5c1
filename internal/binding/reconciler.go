package binding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
)

var _ reconcile.Reconciler = (*Reconciler)(nil)

// errStale: the target cache has not seen nudge's last apply to the target
// yet; the reconcile is retried after staleRetry (the target's update event
// usually comes first). The same wait applies to a binding whose status
// nudge just wrote.
var errStale = errors.New("the target cache has not seen nudge's last apply yet")

const staleRetry = 200 * time.Millisecond

// outcome is what one reconcile of a binding ends with: its Ready condition
// and applied fingerprint, and when to look again.
type outcome struct {
	reason, message string
	// applied is the status.appliedFingerprint to record; keep keeps the
	// one recorded (if it is for the binding's generation).
	applied string
	keep    bool
	after   time.Duration
	// due: an apply made the status due; it is written by a later
	// reconcile, once the applies pause (see statusDelay).
	due bool
	// recheck: the target was written by another while nudge's apply was
	// in flight, and that update's event reconciled nothing (see
	// overwrites.own): look again after staleRetry.
	recheck bool
}

func failed(reason, format string, args ...any) outcome {
	return outcome{reason: reason, message: fmt.Sprintf(format, args...), keep: true}
}

// Reconcile brings one binding's target to its sources' values, or says in
// the binding's Ready condition why it does not.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	var b v1alpha1.ValueBinding
	if err := r.bindings.Get(ctx, req.NamespacedName, &b); err != nil {
		if apierrors.IsNotFound(err) {
			r.conflicts.forget(req.String())
			r.statuses.done(req.String())
			r.ready.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("valuebinding", req.String()))
	// A binding whose status nudge just wrote, read from a cache that has
	// not seen the write, would look changed (and reset its overwrites).
	if r.conflicts.stale(statusKey(&b), b.ResourceVersion, r.Clock.Now()) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &b)
	}
	if err := r.keepFinalizer(ctx, &b); err != nil {
		return ctrl.Result{}, err
	}
	out, err := r.sync(ctx, &b)
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Reconciled ValueBinding", "reason", out.reason)
	result, err := r.conclude(ctx, &b, req, out)
	if out.recheck && (result.RequeueAfter == 0 || result.RequeueAfter > staleRetry) {
		result.RequeueAfter = staleRetry
	}
	return result, err
}

// conclude records out, the outcome of binding b's reconcile, in its
// status, or leaves that to a later reconcile while an apply's status is
// due.
func (r *Reconciler) conclude(ctx context.Context, b *v1alpha1.ValueBinding, req reconcile.Request, out outcome) (ctrl.Result, error) {
	if out.due {
		r.statuses.set(bindingKey(b), dueStatus{generation: b.Generation, fingerprint: out.applied, binding: req.NamespacedName, at: time.Now()})
		if r.Lull != nil {
			// pending.flush queues it once the applies pause; this is
			// the fallback.
			return ctrl.Result{RequeueAfter: statusMaxWait}, nil
		}
		return ctrl.Result{RequeueAfter: statusDelay}, nil
	}
	// Real time, as the Lull's (r.Clock tells the time of overwrites).
	if due, ok := r.statuses.get(bindingKey(b)); ok && out.reason == v1alpha1.ReasonApplied && due.fingerprint == out.applied &&
		waiting(r.Lull, due.at, time.Now()) {
		// pending.flush queues it once the applies pause; this is the
		// fallback.
		return ctrl.Result{RequeueAfter: time.Until(due.at.Add(statusMaxWait))}, nil
	}
	if err := r.record(ctx, b, out); err != nil {
		return ctrl.Result{}, err
	}
	r.ready.set(req.String(), out.reason)
	return ctrl.Result{RequeueAfter: out.after}, nil
}

// target is a binding's target resolved: its kind, its parsed field paths,
// and the object from the target cache (nil when it does not exist).
type target struct {
	gvk   schema.GroupVersionKind
	paths []Path
	obj   *unstructured.Unstructured
}

// resolve checks what a binding may not do (a kind not allowed, not served,
// cluster-scoped; a field path that does not parse), starts watching its
// target kind, and reads the target. A non-nil outcome ends the reconcile.
func (r *Reconciler) resolve(ctx context.Context, b *v1alpha1.ValueBinding) (*target, *outcome, error) {
	t := &target{}
	for i, v := range b.Spec.Values {
		p, err := ParsePath(v.FieldPath)
		if err != nil {
			o := failed(v1alpha1.ReasonInvalidFieldPath, "values[%d].fieldPath: %v", i, err)
			return nil, &o, nil
		}
		t.paths = append(t.paths, p)
	}
	ref := b.Spec.Target
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		o := failed(v1alpha1.ReasonRefused, "target apiVersion %q: %v", ref.APIVersion, err)
		return nil, &o, nil
	}
	t.gvk = gv.WithKind(ref.Kind)
	gk := t.gvk.GroupKind()
	if !slices.Contains(r.Targets, gk) {
		if len(r.Targets) == 0 {
			o := failed(v1alpha1.ReasonRefused, "nudge may write no kind: its --value-binding-targets is empty")
			return nil, &o, nil
		}
		o := failed(v1alpha1.ReasonRefused, "kind %s is not in nudge's --value-binding-targets", gk)
		return nil, &o, nil
	}
	mapping, err := r.Client.RESTMapper().RESTMapping(gk, gv.Version)
	if apimeta.IsNoMatchError(err) {
		o := failed(v1alpha1.ReasonTargetNotFound, "the API server does not serve %s %s", ref.APIVersion, ref.Kind)
		o.keep, o.after = false, r.DiscoveryInterval
		return nil, &o, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %s: %w", t.gvk, err)
	}
	if mapping.Scope.Name() != apimeta.RESTScopeNameNamespace {
		o := failed(v1alpha1.ReasonRefused, "%s %s is cluster-scoped: a binding writes only in its own namespace", ref.APIVersion, ref.Kind)
		return nil, &o, nil
	}
	if err := r.watchTarget(t.gvk); err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(t.gvk)
	err = r.targets.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ref.Name}, u)
	if apierrors.IsNotFound(err) {
		o := failed(v1alpha1.ReasonTargetNotFound, "%s %s does not exist; nothing is written until it does", ref.Kind, ref.Name)
		o.keep = false
		return nil, &o, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s %s from the cache: %w", ref.Kind, ref.Name, err)
	}
	t.obj = u
	return t, nil, nil
}

// sync decides and carries out what a binding needs; the error is one to
// retry with backoff.
func (r *Reconciler) sync(ctx context.Context, b *v1alpha1.ValueBinding) (outcome, error) {
	t, o, err := r.resolve(ctx, b)
	if err != nil || o != nil {
		return deref(o), err
	}
	if r.conflicts.stale(bindingKey(b), t.obj.GetResourceVersion(), r.Clock.Now()) {
		return outcome{}, errStale
	}
	desired, sums, o, err := r.desired(ctx, b)
	if err != nil || o != nil {
		return deref(o), err
	}
	in := Input{
		Generation: b.Generation, ObservedGeneration: b.Status.ObservedGeneration,
		Applied: b.Status.AppliedFingerprint, Desired: desired,
		Stopped: readyReason(b) == v1alpha1.ReasonConflict,
		Now:     r.Clock.Now(),
	}
	if due, ok := r.statuses.get(bindingKey(b)); ok && due.generation == b.Generation {
		// nudge applied and has not written the status yet: that apply
		// is the last word, not the status.
		in.ObservedGeneration, in.Applied, in.Stopped = due.generation, due.fingerprint, false
	}
	in.Overwrites = r.conflicts.get(bindingKey(b), in.Now)
	for i, v := range b.Spec.Values {
		f := Field{Path: v.FieldPath, Skipped: sums[i] == ""}
		if cur, ok := t.paths[i].Get(t.obj.Object); ok && !f.Skipped {
			f.Matches = Matches(cur, sums[i], v.Type)
		}
		own := ownerOf(t.obj.GetManagedFields(), t.paths[i])
		f.Owned, f.Owner = own.nudge, own.other
		in.Fields = append(in.Fields, f)
	}
	d := Decide(in)
	log := ctrl.LoggerFrom(ctx)
	if d.Reset {
		r.conflicts.reset(bindingKey(b))
	}
	switch d.Action {
	case None:
		return applied(b, desired), nil
	case Stop:
		if d.Field == "" { // stopped before, nothing changed since
			return outcome{reason: v1alpha1.ReasonConflict, message: conditionMessage(b), keep: true}, nil
		}
		log.Info("Stopped applying ValueBinding: another field manager keeps overwriting a bound field",
			"field", d.Field, "manager", d.Manager)
		return failed(v1alpha1.ReasonConflict,
			"field manager %q overwrote %s %d times within %s; nudge stopped applying until the binding or a source changes",
			d.Manager, d.Field, ConflictLimit, ConflictWindow), nil
	}
	if len(d.Overwritten) > 0 {
		r.conflicts.add(bindingKey(b), d.Overwritten, in.Now)
		log.Info("Correcting ValueBinding fields another field manager overwrote", "fields", d.Overwritten)
	}
	r.conflicts.applying(bindingKey(b))
	rv, o, err := r.apply(ctx, b, t, sums)
	recheck := r.conflicts.applied(bindingKey(b), rv)
	if err != nil || o != nil {
		out := deref(o)
		out.recheck = recheck
		return out, err
	}
	if rv != t.obj.GetResourceVersion() {
		r.conflicts.wrote(bindingKey(b), t.obj.GetResourceVersion(), r.Clock.Now())
		if r.Lull != nil {
			r.Lull.Wrote(time.Now())
		}
	}
	written := appliedFields(b, sums)
	log.Info("Applied ValueBinding", "target", b.Spec.Target.Kind+"/"+b.Spec.Target.Name, "fields", written)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, v1alpha1.ReasonApplied, "Apply",
		"Applied to %s %s: %s", b.Spec.Target.Kind, b.Spec.Target.Name, strings.Join(written, "; "))
	out := applied(b, desired)
	// The status changes with this apply (a source or the binding
	// changed): written by the next reconcile, after the other targets.
	out.due = rv != t.obj.GetResourceVersion() && !in.Current()
	out.recheck = recheck
	return out, nil
}

// applied is the outcome of a binding whose target holds its values.
func applied(b *v1alpha1.ValueBinding, desired string) outcome {
	return outcome{reason: v1alpha1.ReasonApplied, applied: desired,
		message: fmt.Sprintf("%s %s holds every bound value", b.Spec.Target.Kind, b.Spec.Target.Name)}
}

func deref(o *outcome) outcome {
	if o == nil {
		return outcome{}
	}
	return *o
}

// desired returns the fingerprint of what the binding's sources hold now,
// from the source cache, and per value the SHA-256 of its source's value, ""
// when its source or key is optional and missing. A required one missing
// ends the reconcile with SourceNotFound or KeyNotFound.
func (r *Reconciler) desired(ctx context.Context, b *v1alpha1.ValueBinding) (string, []string, *outcome, error) {
	state := fingerprint.State{KeyID: r.Key.ID(), Entries: map[refs.Source]fingerprint.Entry{}}
	keys := map[refs.Source][]string{}
	found := map[refs.Source]fingerprint.Digests{}
	sums := make([]string, len(b.Spec.Values))
	for i, v := range b.Spec.Values {
		kind, sel := sourceOf(v)
		if sel == nil {
			o := failed(v1alpha1.ReasonSourceNotFound, "values[%d] has no valueFrom source", i)
			return "", nil, &o, nil
		}
		src := refs.Source{Kind: refs.Kind(kind), Namespace: b.Namespace, Name: sel.Name}
		optional := sel.Optional != nil && *sel.Optional
		d, seen := found[src]
		if !seen {
			var obj client.Object = &corev1.Secret{}
			if kind == "ConfigMap" {
				obj = &corev1.ConfigMap{}
			}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: sel.Name}, obj)
			switch {
			case apierrors.IsNotFound(err):
				d = nil
			case err != nil:
				return "", nil, nil, fmt.Errorf("reading %s %s from the cache: %w", kind, sel.Name, err)
			default:
				d = sources.Digests(obj)
			}
			found[src] = d
		}
		if d == nil {
			if !optional {
				o := failed(v1alpha1.ReasonSourceNotFound, "%s %s does not exist", kind, sel.Name)
				return "", nil, &o, nil
			}
			state.Entries[src] = fingerprint.Entry{Digest: fingerprint.Absent}
			continue
		}
		keys[src] = append(keys[src], sel.Key)
		sum, ok := d[sel.Key]
		if !ok && !optional {
			o := failed(v1alpha1.ReasonKeyNotFound, "%s %s has no key %s", kind, sel.Name, sel.Key)
			return "", nil, &o, nil
		}
		sums[i] = sum
	}
	for src, ks := range keys {
		slices.Sort(ks)
		ref := refs.Reference{Source: src, Keys: slices.Compact(ks)}
		state.Entries[src] = r.Key.Entry(ref, found[src])
	}
	return state.Format(b.Namespace), sums, nil, nil
}

// appliedFields describes the fields an apply wrote: "key K of Secret S →
// fieldPath", never a value.
func appliedFields(b *v1alpha1.ValueBinding, sums []string) []string {
	var out []string
	for i, v := range b.Spec.Values {
		if sums[i] == "" {
			continue
		}
		kind, sel := sourceOf(v)
		out = append(out, fmt.Sprintf("key %s of %s %s to %s", sel.Key, kind, sel.Name, v.FieldPath))
	}
	return out
}

func bindingKey(b *v1alpha1.ValueBinding) string { return client.ObjectKeyFromObject(b).String() }

// keepFinalizer adds Finalizer to a binding with deletionPolicy Delete and
// removes it from one without.
func (r *Reconciler) keepFinalizer(ctx context.Context, b *v1alpha1.ValueBinding) error {
	want := b.Spec.DeletionPolicy == v1alpha1.DeletionDelete
	if want == controllerutil.ContainsFinalizer(b, Finalizer) {
		return nil
	}
	old := b.DeepCopy()
	if want {
		controllerutil.AddFinalizer(b, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(b, Finalizer)
	}
	if err := r.writer.Patch(ctx, b, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the finalizer of ValueBinding %s: %w", b.Name, err)
	}
	return nil
}
