package sources

import (
	"bytes"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// digestedMark is written to the selfLink of a cached source once its values
// are replaced by digests, so the transform is idempotent. selfLink is
// deprecated precisely because the API server no longer sets it, which makes
// it a field no real object carries.
const digestedMark = "nudge:digested"

// DigestSource returns the cache transform for ConfigMaps and Secrets: it
// replaces every value (data and binaryData) with its SHA-256 (see
// fingerprint.Sum), so the cache never holds a source's content, and keeps of
// the metadata only what nudge reads: name, namespace, resourceVersion, the
// annotations named in keep (the ignore and match marks,
// dialect.Parser.SourceAnnotations), and the labels only when keepLabels
// (for --resource-label-selector). Other objects pass through unchanged. It
// is idempotent.
func DigestSource(keepLabels bool, keep []string) func(any) (any, error) {
	return func(obj any) (any, error) {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			//lint:ignore SA1019 see digestedMark
			if o.SelfLink == digestedMark {
				return o, nil
			}
			// In place: the decoded map is the one kept, no second one.
			d := o.Data
			for k, v := range d {
				d[k] = fingerprint.SumString(v)
			}
			if d == nil && len(o.BinaryData) > 0 {
				d = make(map[string]string, len(o.BinaryData))
			}
			for k, v := range o.BinaryData {
				d[k] = fingerprint.Sum(v)
			}
			*o = corev1.ConfigMap{ObjectMeta: sourceMeta(o.ObjectMeta, keepLabels, keep), Data: d}
		case *corev1.Secret:
			//lint:ignore SA1019 see digestedMark
			if o.SelfLink == digestedMark {
				return o, nil
			}
			for k, v := range o.Data {
				o.Data[k] = []byte(fingerprint.Sum(v))
			}
			*o = corev1.Secret{ObjectMeta: sourceMeta(o.ObjectMeta, keepLabels, keep), Data: o.Data}
		}
		return obj, nil
	}
}

// sourceMeta keeps what nudge reads of a source's metadata, marked digested.
func sourceMeta(m metav1.ObjectMeta, keepLabels bool, keep []string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}
	if keepLabels {
		out.Labels = m.Labels
	}
	//lint:ignore SA1019 see digestedMark
	out.SelfLink = digestedMark
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

// Digests returns the per-key digests of a source read from the cache, or
// nil for any other object.
func Digests(obj client.Object) fingerprint.Digests {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return fingerprint.Digests(o.Data)
	case *corev1.Secret:
		d := make(fingerprint.Digests, len(o.Data))
		for k, v := range o.Data {
			d[k] = string(v)
		}
		return d
	}
	return nil
}

// Changed passes creates, deletes and those updates of a source that
// change its content or a mark nudge reads on it (ignore, match); a change of
// other labels or annotations is dropped here (rule 2) before any workload is
// looked up. d names the marks.
func Changed(d dialect.Parser) predicate.Funcs {
	return predicate.Funcs{
		// A source listed at start brings no news: every workload is reconciled
		// from its own initial event.
		CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return true
			}
			oa, na := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			if d.Ignored(oa) != d.Ignored(na) || d.Matched(oa) != d.Matched(na) {
				return true
			}
			return ContentChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// ContentChanged reports whether two versions of a ConfigMap or Secret hold
// different content: data or binaryData (as cached, their digests). Labels
// and annotations do not count. Objects of other or mismatched types count
// as changed.
func ContentChanged(old, new client.Object) bool {
	switch o := old.(type) {
	case *corev1.ConfigMap:
		n, ok := new.(*corev1.ConfigMap)
		return !ok || !maps.Equal(o.Data, n.Data) || !maps.EqualFunc(o.BinaryData, n.BinaryData, bytes.Equal)
	case *corev1.Secret:
		n, ok := new.(*corev1.Secret)
		return !ok || !maps.EqualFunc(o.Data, n.Data, bytes.Equal)
	}
	return true
}

// ContentDigest returns "<key-id>.<digest>", the keyed digest
// (fingerprint.Key.Source) of the whole content of src, a ConfigMap or
// Secret read digested (see DigestSource), or "absent" when obj is nil (it
// does not exist). It is the form of fleet.RolledForAnnotation and
// fleet.HaltedAnnotation.
func ContentDigest(key fingerprint.Key, src refs.Source, obj client.Object) string {
	if obj == nil {
		return "absent"
	}
	return key.ID() + "." + key.Source(refs.Reference{Source: src}, Digests(obj))
}
