package controller

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// PodStatusGVK is the kind of the Secrets Store CSI driver's
// SecretProviderClassPodStatus (namespaced): one per pod and mounted
// SecretProviderClass, written by the driver on the node when it mounts the
// volume and again when its rotation fetches new versions of the objects
// (https://secrets-store-csi-driver.sigs.k8s.io/topics/secret-auto-rotation).
// nudge reads, of its status (no status subresource: the driver writes the
// whole object), secretProviderClassName, mounted and objects[].{id,version}
// (https://github.com/kubernetes-sigs/secrets-store-csi-driver/blob/main/apis/v1/secretproviderclasspodstatus_types.go).
var PodStatusGVK = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClassPodStatus"}

// NewPodStatus returns an empty SecretProviderClassPodStatus to watch or read.
func NewPodStatus() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(PodStatusGVK)
	return u
}

// PodStatus is what nudge reads of a SecretProviderClassPodStatus.
type PodStatus struct {
	// Class is status.secretProviderClassName, in the object's namespace.
	Class string
	// Mounted is status.mounted.
	Mounted bool
	// Objects is status.objects: the id and version of each mounted object.
	Objects []fingerprint.ObjectVersion
}

// podStatusOf reads a SecretProviderClassPodStatus; ok is false for any
// other object.
func podStatusOf(obj client.Object) (s PodStatus, ok bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != PodStatusGVK {
		return PodStatus{}, false
	}
	s.Class, _, _ = unstructured.NestedString(u.Object, "status", "secretProviderClassName")
	s.Mounted, _, _ = unstructured.NestedBool(u.Object, "status", "mounted")
	objects, _, _ := unstructured.NestedSlice(u.Object, "status", "objects")
	for _, o := range objects {
		m, _ := o.(map[string]any)
		id, _ := m["id"].(string)
		version, _ := m["version"].(string)
		s.Objects = append(s.Objects, fingerprint.ObjectVersion{ID: id, Version: version})
	}
	return s, true
}

// TrimPodStatus is the cache transform for SecretProviderClassPodStatuses: it
// keeps name, namespace, resourceVersion and of the status what PodStatus
// holds (no labels, annotations, owners, pod name or target path). Other
// objects pass through unchanged. It is idempotent.
func TrimPodStatus(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != PodStatusGVK {
		return obj, nil
	}
	s, _ := podStatusOf(u)
	objects := make([]any, len(s.Objects))
	for i, o := range s.Objects {
		objects[i] = map[string]any{"id": o.ID, "version": o.Version}
	}
	meta := map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "resourceVersion": u.GetResourceVersion()}
	if t := u.GetDeletionTimestamp(); t != nil {
		meta["deletionTimestamp"] = u.Object["metadata"].(map[string]any)["deletionTimestamp"]
	}
	u.Object = map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta,
		"status": map[string]any{"secretProviderClassName": s.Class, "mounted": s.Mounted, "objects": objects},
	}
	return u, nil
}

// podStatusChanged passes creates (but those of the initial list), deletes
// and the updates of a SecretProviderClassPodStatus that change what nudge
// reads of it (class, mounted, objects' ids and versions); a change of its
// labels or annotations only is dropped (rule 2).
func podStatusChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := podStatusOf(e.ObjectOld)
			n, ok2 := podStatusOf(e.ObjectNew)
			return !ok1 || !ok2 || o.Class != n.Class || o.Mounted != n.Mounted || !slices.Equal(o.Objects, n.Objects)
		},
	}
}

// WatchPodStatuses makes r's controller (see SetupWithManager) also
// reconcile the workloads of r's kind that may mount the SecretProviderClass
// of each SecretProviderClassPodStatus that changes, read from mgr's cache.
// It may be called while the manager runs; the caller sets the CSI flag of
// the reconcilers after.
func (r *Reconciler) WatchPodStatuses(mgr ctrl.Manager) error {
	if r.ctrl == nil {
		return fmt.Errorf("watching SecretProviderClassPodStatuses for %ss: the controller is not set up", r.Kind.Name())
	}
	return r.ctrl.Watch(source.Kind[client.Object](mgr.GetCache(), NewPodStatus(),
		handler.EnqueueRequestsFromMapFunc(r.workloadsOf), podStatusChanged()))
}

// csiOn reports whether nudge watches SecretProviderClassPodStatuses now.
func (r Selector) csiOn() bool { return r.CSI != nil && r.CSI.Load() }

// podStatuses lists from the Reader the SecretProviderClassPodStatuses of
// namespace.
func (r Selector) podStatuses(ctx context.Context, namespace string) ([]PodStatus, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PodStatusGVK.GroupVersion().WithKind(PodStatusGVK.Kind + "List"))
	// Only read, and trimmed by TrimPodStatus: no deep copy of the cache's.
	if err := r.Reader.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing SecretProviderClassPodStatuses in %s: %w", namespace, err)
	}
	out := make([]PodStatus, 0, len(list.Items))
	for i := range list.Items {
		if s, ok := podStatusOf(&list.Items[i]); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// classNames returns the names of the SecretProviderClasses some pod of
// namespace has mounted, for name patterns.
func (r Selector) classNames(ctx context.Context, namespace string) ([]string, error) {
	if !r.csiOn() {
		return nil, nil
	}
	statuses, err := r.podStatuses(ctx, namespace)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range statuses {
		if s.Mounted && s.Class != "" {
			names = append(names, s.Class)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// resolveClass reads a SecretProviderClass reference from the pod statuses
// of its namespace and records it in in: its digest is over the versions of
// the objects every mounted pod status of the class holds
// (fingerprint.Versions). With none mounted, no pod runs with the class:
// it counts for nothing (Unmounted) and leaves the references, so the first
// pod that mounts it makes a baseline, not a rollout. SecretProviderClasses
// are not read themselves: Reloader's ignore and match marks on them are not
// seen, so search mode never selects one.
func (r Resolver) resolveClass(ctx context.Context, c candidate, in *rollout.Input) (Outcome, error) {
	if !r.csiOn() {
		return CSIOff, nil
	}
	if c.needsMatch {
		return Unmatched, nil
	}
	statuses, err := r.podStatuses(ctx, c.Namespace)
	if err != nil {
		return "", err
	}
	var pods [][]fingerprint.ObjectVersion
	for _, s := range statuses {
		if s.Mounted && s.Class == c.Name {
			pods = append(pods, s.Objects)
		}
	}
	if len(pods) == 0 {
		return Unmounted, nil
	}
	in.Desired.Entries[c.Source] = fingerprint.Entry{
		Shape:  fingerprint.Shape(c.Reference),
		Digest: r.Key.Source(refs.Reference{Source: c.Source}, fingerprint.Versions(pods...)),
	}
	return Counted, nil
}
