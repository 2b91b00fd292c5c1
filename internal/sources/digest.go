package sources

import (
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// digestedMark begins the selfLink of a cached source once its values are
// replaced by digests, so the transform is idempotent; the digests follow it
// (see packDigests). selfLink is deprecated precisely because the API server
// no longer sets it, which makes it a field no real object carries, and a
// string costs far less than the map of data it stands for (a map of 4 keys
// takes about 500 bytes with its keys and digests, the string about 160).
const digestedMark = "nudge:digested:"

// Digested reports whether obj, a ConfigMap or Secret, is digested: its
// selfLink holds its digests (DigestedSelfLink) in place of its values.
func Digested(obj client.Object) bool {
	return strings.HasPrefix(obj.GetSelfLink(), digestedMark)
}

// DigestedSelfLink returns the selfLink a ConfigMap or Secret carries in
// nudge's cache in place of its values (see trim.Sources): digestedMark
// followed by the SHA-256 of each value, data and binaryData (see
// fingerprint.Sum), packed (packDigests), which Digests, ContentChanged
// and ContentDigest read back. A digested source gives its own selfLink.
// ok is false for any other object.
func DigestedSelfLink(obj client.Object) (link string, ok bool) {
	packed, ok := content(obj)
	if !ok {
		return "", false
	}
	return digestedMark + packed, true
}

// configMapDigests returns the digests of a ConfigMap's values, data and
// binaryData in one map (the API server refuses a key in both).
func configMapDigests(o *corev1.ConfigMap) fingerprint.Digests {
	d := make(fingerprint.Digests, len(o.Data)+len(o.BinaryData))
	for k, v := range o.Data {
		d[k] = fingerprint.SumString(v)
	}
	for k, v := range o.BinaryData {
		d[k] = fingerprint.Sum(v)
	}
	return d
}

// secretDigests returns the digests of a Secret's values.
func secretDigests(o *corev1.Secret) fingerprint.Digests {
	d := make(fingerprint.Digests, len(o.Data))
	for k, v := range o.Data {
		d[k] = fingerprint.Sum(v)
	}
	return d
}

// packDigests returns d as one string: for each key in sorted order, its
// length as a uvarint, the key and its digest (sha256.Size bytes). Equal
// digests give equal strings.
func packDigests(d fingerprint.Digests) string {
	n := 0
	for k := range d {
		n += binary.MaxVarintLen64 + len(k) + sha256.Size
	}
	buf := make([]byte, 0, n)
	for _, k := range slices.Sorted(maps.Keys(d)) {
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = append(buf, d[k]...)
	}
	return string(buf)
}

// unpackDigests reads the digests packDigests wrote; it returns nil when p is
// malformed (packDigests never writes such a string).
func unpackDigests(p string) fingerprint.Digests {
	d := fingerprint.Digests{}
	for p != "" {
		n, w := binary.Uvarint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
		if w <= 0 || n > uint64(len(p)-w) || uint64(len(p)-w)-n < sha256.Size {
			return nil
		}
		k := p[w : w+int(n)]
		d[k] = p[w+int(n) : w+int(n)+sha256.Size]
		p = p[w+int(n)+sha256.Size:]
	}
	return d
}

// packedOf returns the packed digests of a source's metadata, ok false when
// the source is not digested.
func packedOf(m metav1.ObjectMeta) (packed string, ok bool) {
	//lint:ignore SA1019 see digestedMark
	return strings.CutPrefix(m.SelfLink, digestedMark)
}

// Digests returns the per-key digests of a ConfigMap or Secret: those
// packed in its selfLink when it is digested (read from the cache, see
// DigestedSelfLink), else those of its values. It returns nil for any other object.
func Digests(obj client.Object) fingerprint.Digests {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if p, ok := packedOf(o.ObjectMeta); ok {
			return unpackDigests(p)
		}
		return configMapDigests(o)
	case *corev1.Secret:
		if p, ok := packedOf(o.ObjectMeta); ok {
			return unpackDigests(p)
		}
		return secretDigests(o)
	}
	return nil
}

// content returns the packed digests of a ConfigMap or Secret, digested or
// not, ok false for any other object.
func content(obj client.Object) (packed string, ok bool) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if p, ok := packedOf(o.ObjectMeta); ok {
			return p, true
		}
	case *corev1.Secret:
		if p, ok := packedOf(o.ObjectMeta); ok {
			return p, true
		}
	default:
		return "", false
	}
	return packDigests(Digests(obj)), true
}

// Changed passes creates, deletes and those updates of a source that
// change its content or a mark nudge reads on it (ignore, match, urgent,
// paused: set, lifted or made malformed); a change of other labels or
// annotations is dropped here (rule 2) before any workload is looked up. d
// names the marks.
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
			if d.Ignored(oa) != d.Ignored(na) || d.Matched(oa) != d.Matched(na) || dialect.Urgent(oa) != dialect.Urgent(na) ||
				pauseOf(oa) != pauseOf(na) {
				return true
			}
			return ContentChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// pause is what a source's nudge.dev/paused says: whether it pauses, and
// whether it is malformed (see dialect.Paused).
type pause struct{ paused, malformed bool }

func pauseOf(annotations map[string]string) pause {
	paused, err := dialect.Paused(annotations)
	return pause{paused, err != nil}
}

// ContentChanged reports whether two versions of a ConfigMap or Secret hold
// different content: data or binaryData (as cached, their digests). Labels
// and annotations do not count. Objects of other or mismatched types count
// as changed.
func ContentChanged(old, new client.Object) bool {
	o, ok := content(old)
	if !ok || reflect.TypeOf(old) != reflect.TypeOf(new) {
		return true
	}
	n, _ := content(new)
	return o != n
}

// ContentDigest returns "<key-id>.<digest>", the keyed digest
// (fingerprint.Key.Source) of the whole content of src, a ConfigMap or
// Secret read digested (see DigestedSelfLink), or "absent" when obj is nil (it
// does not exist). It is the form of fleet.RolledForAnnotation and
// fleet.HaltedAnnotation.
func ContentDigest(key fingerprint.Key, src refs.Source, obj client.Object) string {
	if obj == nil {
		return "absent"
	}
	return key.ID() + "." + key.Source(refs.Reference{Source: src}, Digests(obj))
}
