package workload

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer writes Changes to workloads, as nudge's field manager
// (FieldManager), with a JSON merge patch.
type Writer struct {
	// Client writes what must be answered whole (see Apply).
	Client client.Client
	// Metadata writes the rest, answered with the metadata alone.
	Metadata metadata.Interface
}

// Apply writes c to obj, of kind k. obj's metadata is updated from the
// response; its spec only when whole, for a workload read whole afterwards
// (a CronJob a Job is started from copies its job template from the
// answer): otherwise the API server answers with the metadata alone
// (PartialObjectMetadata, in protobuf), which is all a reconcile reads of
// obj after a write (its resourceVersion, annotations and seal), and obj
// keeps the spec it was read with: the API server encodes less. It returns
// the API server's error.
func (w Writer) Apply(ctx context.Context, k Kind, obj client.Object, c Change, whole bool) error {
	body, err := c.Patch(k)
	if err != nil {
		return err
	}
	if whole {
		return w.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldManager))
	}
	return w.patchMetadata(ctx, k, obj, body)
}

// patchMetadata sends the merge patch body for obj through w.Metadata to
// the kind's resource (controller-runtime's metadata client made a REST
// mapping per write, which allocated more than the whole answer's decoding:
// BenchmarkApplyAnswer in package controller), and sets on obj the metadata
// a write may change, as answered: resourceVersion, generation, labels
// (with nudge's seal), annotations, managedFields and selfLink (which drops
// the cache's seal mark, see Seal).
func (w Writer) patchMetadata(ctx context.Context, k Kind, obj client.Object, body []byte) error {
	gvk, err := w.Client.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	meta, err := w.Metadata.Resource(gvk.GroupVersion().WithResource(k.Plural())).Namespace(obj.GetNamespace()).
		Patch(ctx, obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(meta.GetResourceVersion())
	obj.SetGeneration(meta.GetGeneration())
	obj.SetLabels(meta.GetLabels())
	obj.SetAnnotations(meta.GetAnnotations())
	obj.SetManagedFields(meta.GetManagedFields())
	obj.SetSelfLink(meta.GetSelfLink())
	return nil
}
