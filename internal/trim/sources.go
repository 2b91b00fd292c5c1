package trim

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/sources"
)

// Sources returns the cache transform for ConfigMaps and Secrets: it
// replaces every value (data and binaryData) with its SHA-256 (see
// fingerprint.Sum), so the cache never holds a source's content, and keeps of
// the metadata only what nudge reads: name, namespace, resourceVersion, the
// annotations named in keep (the ignore and match marks,
// dialect.Parser.SourceAnnotations), the labels (as a map when keepLabels,
// for --resource-label-selector; otherwise packed into the generateName,
// sources.PackedLabels, for the label selectors of workloads), and of a
// Secret its type and the owner references owners returns (the producer's,
// see producer.Owners; none when nil). Read the labels with
// sources.Labels.
// The digests are packed into the selfLink (sources.DigestedSelfLink), and
// data and binaryData are left empty: read them with sources.Digests,
// compare them with sources.ContentChanged. Other objects pass through
// unchanged. It is idempotent.
func Sources(keepLabels bool, keep []string, owners func([]metav1.OwnerReference) []metav1.OwnerReference) func(any) (any, error) {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			if sources.Digested(o) {
				return o, nil
			}
			meta := sourceMeta(o.ObjectMeta, keepLabels, keep)
			//lint:ignore SA1019 see sources.DigestedSelfLink
			meta.SelfLink, _ = sources.DigestedSelfLink(o)
			*o = corev1.ConfigMap{ObjectMeta: meta}
		case *corev1.Secret:
			if sources.Digested(o) {
				return o, nil
			}
			meta := sourceMeta(o.ObjectMeta, keepLabels, keep)
			if owners != nil {
				meta.OwnerReferences = owners(o.OwnerReferences)
			}
			//lint:ignore SA1019 see sources.DigestedSelfLink
			meta.SelfLink, _ = sources.DigestedSelfLink(o)
			*o = corev1.Secret{ObjectMeta: meta, Type: corev1.SecretType(unique.Make(string(o.Type)).Value())}
		}
		return obj, nil
	}
}

// sourceMeta keeps what nudge reads of a source's metadata, with one copy of
// each namespace's name for every object in it.
func sourceMeta(m metav1.ObjectMeta, keepLabels bool, keep []string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: unique.Make(m.Namespace).Value(), ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}
	if keepLabels {
		out.Labels = m.Labels
	} else {
		out.GenerateName = string(sources.PackLabels(m.Labels))
	}
	for _, k := range keep {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}
