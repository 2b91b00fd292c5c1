package csi

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/fingerprint"
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

// PodStatusOf reads a SecretProviderClassPodStatus; ok is false for any
// other object.
func PodStatusOf(obj client.Object) (s PodStatus, ok bool) {
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

// PodStatusChanged passes creates, deletes and the updates of a
// SecretProviderClassPodStatus that change what nudge reads of it (class,
// mounted, objects' ids and versions); a change of its labels or
// annotations only is dropped (rule 2), and so are the creates of the
// informer's initial list: each workload is reconciled on its own first
// sight, and a watch added while nudge runs has its handler in place before
// any reconcile reads a pod status (see
// Watch), so a later version reaches it as
// an update.
func PodStatusChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := PodStatusOf(e.ObjectOld)
			n, ok2 := PodStatusOf(e.ObjectNew)
			return !ok1 || !ok2 || o.Class != n.Class || o.Mounted != n.Mounted || !slices.Equal(o.Objects, n.Objects)
		},
	}
}

// PodStatuses lists from r the SecretProviderClassPodStatuses of namespace,
// read without a deep copy: r must return them trimmed (trim.PodStatus), and
// the caller must not change them.
func PodStatuses(ctx context.Context, r client.Reader, namespace string) ([]PodStatus, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PodStatusGVK.GroupVersion().WithKind(PodStatusGVK.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing SecretProviderClassPodStatuses in %s: %w", namespace, err)
	}
	out := make([]PodStatus, 0, len(list.Items))
	for i := range list.Items {
		if s, ok := PodStatusOf(&list.Items[i]); ok {
			out = append(out, s)
		}
	}
	return out, nil
}
