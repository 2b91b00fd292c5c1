package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"nudge.dev/nudge/api/v1alpha1"
)

// applyConfig returns the apply configuration of target t with no field:
// apiVersion, kind, name, namespace and the target's uid. The uid makes the
// apply a precondition on the object nudge read: the API server refuses an
// apply whose uid names no existing object ("uid mismatch", 409) instead of
// creating it, and one whose uid is not the object's (deleted and created
// again) as an invalid change of metadata.uid. So nudge never creates a
// target, even when it is deleted between the cache read and the apply. A
// resourceVersion would do the same, but would also fail the apply on every
// unrelated write to the target (an operator's status updates).
func applyConfig(b *v1alpha1.ValueBinding, t *target) *unstructured.Unstructured {
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	cfg.SetGroupVersionKind(t.gvk)
	cfg.SetName(b.Spec.Target.Name)
	cfg.SetNamespace(b.Namespace)
	cfg.SetUID(t.obj.GetUID())
	return cfg
}

// apply writes the binding's fields (those with a digest in sums) to its
// target by server-side apply under FieldManager, forced on those fields
// alone. Each Secret or ConfigMap is read once, from the API server, and its
// values are dropped when apply returns. A non-nil outcome says why nothing
// was written; the error is one to retry. It returns the target's
// resourceVersion after the apply. The sources' data is released when it
// returns.
func (r *Reconciler) apply(ctx context.Context, b *v1alpha1.ValueBinding, t *target, sums []string) (string, *outcome, error) {
	cfg := applyConfig(b, t)
	sources := map[string]map[string][]byte{}
	var secrets []string
	for i, v := range b.Spec.Values {
		if sums[i] == "" {
			continue
		}
		kind, sel := sourceOf(v)
		data, ok := sources[kind+"/"+sel.Name]
		if !ok {
			var err error
			var release func()
			data, release, err = r.read(ctx, kind, b.Namespace, sel.Name)
			defer release()
			if err != nil {
				if apierrors.IsNotFound(err) { // deleted since the cache saw it
					o := failed(v1alpha1.ReasonSourceNotFound, "%s %s does not exist", kind, sel.Name)
					return "", &o, nil
				}
				return "", nil, err
			}
			sources[kind+"/"+sel.Name] = data
		}
		raw, ok := data[sel.Key]
		if !ok {
			o := failed(v1alpha1.ReasonKeyNotFound, "%s %s has no key %s", kind, sel.Name, sel.Key)
			return "", &o, nil
		}
		value, err := Convert(raw, v.Type)
		if err != nil {
			o := failed(v1alpha1.ReasonInvalidValue, "key %s of %s %s for %s: %v", sel.Key, kind, sel.Name, v.FieldPath, err)
			return "", &o, nil
		}
		secrets = append(secrets, echoes(raw, value)...)
		if err := t.paths[i].Set(cfg.Object, t.obj.Object, value); err != nil {
			o := failed(v1alpha1.ReasonInvalidFieldPath, "values[%d].fieldPath: %v", i, err)
			return "", &o, nil
		}
	}
	rv, err := r.applyTo(ctx, cfg)
	clear(cfg.Object)
	if err == nil {
		return rv, nil, nil
	}
	o, err := r.applyFailed(b, err, secrets)
	return "", o, err
}

// applyTo server-side applies cfg under FieldManager, forced on its fields,
// and returns the target's resourceVersion after the apply. The API server
// answers with the target's metadata alone (PartialObjectMetadata, in
// protobuf), not the whole target: nudge needs only the resourceVersion, and
// decoding the whole target for each apply of a fan-out costs nudge CPU
// that its watch of the targets needs (docs/performance.md). The request
// body, which holds the values, is zeroed before it returns.
func (r *Reconciler) applyTo(ctx context.Context, cfg *unstructured.Unstructured) (string, error) {
	body, err := json.Marshal(cfg.Object)
	if err != nil {
		return "", fmt.Errorf("encoding the apply configuration: %w", err)
	}
	defer clear(body)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(cfg.GroupVersionKind())
	meta.SetNamespace(cfg.GetNamespace())
	meta.SetName(cfg.GetName())
	err = r.writer.Patch(ctx, meta, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(FieldManager), client.ForceOwnership)
	return meta.GetResourceVersion(), err
}

// applyFailed turns an apply's error into an outcome, or an error to retry.
// The API server's message, or a webhook's denial it relays, may quote the
// value it refused, so a message is kept only with every form of every value
// (echoes) taken out.
func (r *Reconciler) applyFailed(b *v1alpha1.ValueBinding, err error, values []string) (*outcome, error) {
	ref := b.Spec.Target
	switch {
	case apierrors.IsNotFound(err), isUIDMismatch(err):
		o := failed(v1alpha1.ReasonTargetNotFound, "%s %s does not exist; nothing is written until it does", ref.Kind, ref.Name)
		o.keep = false
		return &o, nil
	case apierrors.IsInvalid(err):
		var fields []string
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				fields = append(fields, fmt.Sprintf("%s (%s)", c.Field, c.Type))
			}
		}
		o := failed(v1alpha1.ReasonRefused, "the API server refused the apply to %s %s as invalid: %s", ref.Kind, ref.Name, strings.Join(fields, ", "))
		return &o, nil
	case apierrors.IsForbidden(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err), isSchemaMismatch(err),
		apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err), apierrors.IsRequestEntityTooLargeError(err):
		o := failed(v1alpha1.ReasonRefused, "the API server refused the apply to %s %s: %s", ref.Kind, ref.Name, redact(err.Error(), values))
		return &o, nil
	}
	return nil, fmt.Errorf("applying to %s %s: %s", ref.Kind, ref.Name, redact(err.Error(), values))
}

// isSchemaMismatch reports the API server's refusal of an apply whose fields
// do not fit the target's schema (a string where it declares an integer): it
// answers 500 "failed to create typed patch object", which no retry mends.
func isSchemaMismatch(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object")
}

// isUIDMismatch reports the API server's refusal of an apply whose uid names
// no existing object (see applyConfig).
func isUIDMismatch(err error) bool {
	return apierrors.IsConflict(err) && strings.Contains(err.Error(), "uid mismatch")
}

// read returns the data of a Secret or ConfigMap (binaryData merged in),
// read from the API server, never from a cache, and a function that releases
// it. Applies of one version of a source (as the source cache knows it) that
// overlap share one GET (see reads): a Secret bound by many bindings is read
// about once per change, not once per binding, and its data lives as long as
// the applies that use it. The caller must not change the map, and must call
// release once done with it, also after an error.
func (r *Reconciler) read(ctx context.Context, kind, namespace, name string) (map[string][]byte, func(), error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	var cached client.Object = &corev1.Secret{}
	if kind == "ConfigMap" {
		cached = &corev1.ConfigMap{}
	}
	if err := r.Client.Get(ctx, key, cached); err != nil {
		return nil, func() {}, err
	}
	return r.reads.get(ctx, kind+"/"+key.String()+"@"+cached.GetResourceVersion(), func(ctx context.Context) (map[string][]byte, error) {
		return r.get(ctx, kind, key)
	})
}

// get reads a source's data from the API server.
func (r *Reconciler) get(ctx context.Context, kind string, key client.ObjectKey) (map[string][]byte, error) {
	if kind == "Secret" {
		var s corev1.Secret
		if err := r.APIReader.Get(ctx, key, &s); err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, key, &cm); err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, nil
}

// finalize removes, for a binding with deletionPolicy Delete, the fields
// nudge alone owns in its target (an apply of no field under FieldManager),
// then drops the binding's finalizer. A target that is gone, or of a kind
// not allowed or not served, has nothing to remove.
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha1.ValueBinding) error {
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		return nil
	}
	if b.Spec.DeletionPolicy == v1alpha1.DeletionDelete {
		if err := r.release(ctx, b); err != nil {
			return err
		}
	}
	old := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, Finalizer)
	if err := r.writer.Patch(ctx, b, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.conflicts.reset(bindingKey(b))
	return nil
}

// release applies an empty configuration to the binding's target, so the
// fields nudge alone owns are removed.
func (r *Reconciler) release(ctx context.Context, b *v1alpha1.ValueBinding) error {
	gv, err := schema.ParseGroupVersion(b.Spec.Target.APIVersion)
	if err != nil {
		return nil
	}
	t := &target{gvk: gv.WithKind(b.Spec.Target.Kind)}
	if !slices.Contains(r.Targets, t.gvk.GroupKind()) {
		return nil
	}
	mapping, err := r.Client.RESTMapper().RESTMapping(t.gvk.GroupKind(), gv.Version)
	if apimeta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if mapping.Scope.Name() != apimeta.RESTScopeNameNamespace {
		return nil
	}
	if err := r.watchTarget(t.gvk); err != nil {
		return err
	}
	t.obj = &unstructured.Unstructured{}
	t.obj.SetGroupVersionKind(t.gvk)
	if err := r.targets.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Target.Name}, t.obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	_, err = r.applyTo(ctx, applyConfig(b, t))
	if err == nil || apierrors.IsNotFound(err) || isUIDMismatch(err) {
		ctrl.LoggerFrom(ctx).Info("Removed ValueBinding fields from its target", "target", b.Spec.Target.Kind+"/"+b.Spec.Target.Name)
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "Removed", "Delete",
			"Removed the fields nudge alone owned from %s %s (deletionPolicy Delete)", b.Spec.Target.Kind, b.Spec.Target.Name)
		return nil
	}
	return fmt.Errorf("removing the fields of ValueBinding %s from %s %s: %w", b.Name, b.Spec.Target.Kind, b.Spec.Target.Name, err)
}

// record writes the binding's status from out (only when it changed), and a
// Warning Event when its Ready condition turns to a failure.
func (r *Reconciler) record(ctx context.Context, b *v1alpha1.ValueBinding, out outcome) error {
	old := b.DeepCopy()
	if out.keep {
		if b.Status.ObservedGeneration != b.Generation {
			b.Status.AppliedFingerprint = ""
		}
	} else {
		b.Status.AppliedFingerprint = out.applied
	}
	b.Status.ObservedGeneration = b.Generation
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: out.reason,
		Message: out.message, ObservedGeneration: b.Generation}
	if out.reason == v1alpha1.ReasonApplied {
		cond.Status = metav1.ConditionTrue
	}
	changed := apimeta.SetStatusCondition(&b.Status.Conditions, cond)
	if changed && cond.Status == metav1.ConditionFalse {
		ctrl.LoggerFrom(ctx).Info("ValueBinding not applied", "reason", out.reason, "message", out.message)
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, out.reason, "Apply", "%s", out.message)
	}
	if equality.Semantic.DeepEqual(old.Status, b.Status) {
		r.statuses.done(bindingKey(b))
		return nil
	}
	select {
	case r.statusSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := r.writer.Status().Patch(ctx, b, client.MergeFrom(old))
	<-r.statusSlots
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	r.statuses.done(bindingKey(b))
	r.conflicts.wrote(statusKey(b), old.ResourceVersion, r.Clock.Now())
	return nil
}

// statusKey keys the resourceVersion a binding had before nudge last wrote
// its status, in overwrites.before.
func statusKey(b *v1alpha1.ValueBinding) string { return bindingKey(b) + "#status" }

// readyReason returns the reason of b's Ready condition, "" without one.
func readyReason(b *v1alpha1.ValueBinding) string {
	if c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// conditionMessage returns the message of b's Ready condition.
func conditionMessage(b *v1alpha1.ValueBinding) string {
	if c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}
