package producer

import (
	"encoding/binary"
	"strings"
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// packedMark begins the selfLink of a producer Trim has packed; what nudge
// reads of it follows (see pack). selfLink is deprecated precisely because
// the API server no longer sets it: no object served carries one, and a
// string costs far less than the maps of the fields it stands for
// (trim.Sources packs a ConfigMap's digests the same way).
const packedMark = "nudge:producer:"

// Trim is the cache transform of the producers: of an object of a producer
// kind it keeps its API version and kind, name, namespace, resourceVersion
// and generation, and packs into its selfLink (see pack) the name of the
// Secret it writes as its spec has it (an ExternalSecret's
// spec.target.name, a Certificate's spec.secretName) and of its status what
// StatusOf reads (observedGeneration, syncedResourceVersion, the Ready
// condition's status, reason, message cut to maxMessage bytes, and
// observedGeneration). Nothing else is kept: no labels, annotations, owners
// or managed fields, nothing else of its spec (an ExternalSecret's data
// mapping, a Certificate's DNS names) or status. An ExternalSecret of two
// data entries, as kubectl applies it (2.4 KB of JSON), takes about 12.6 KB
// of heap decoded, 2.4 KB with those fields kept as maps, 0.95 KB packed.
// The API version,
// kind and namespace are copies shared by every object that has them
// (unique.Make). Other objects pass through unchanged. It is idempotent.
func Trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	k, ok := kindOf(u.GroupVersionKind().GroupKind())
	if !ok {
		return obj, nil
	}
	if _, ok := unpack(u); ok {
		return u, nil
	}
	s := readWhole(u, k)
	meta := map[string]any{"name": u.GetName(), "namespace": unique.Make(u.GetNamespace()).Value(),
		"resourceVersion": u.GetResourceVersion(), "selfLink": s.pack()}
	if s.generation != 0 {
		meta["generation"] = s.generation
	}
	u.Object = map[string]any{"apiVersion": unique.Make(u.GetAPIVersion()).Value(), "kind": unique.Make(u.GetKind()).Value(), "metadata": meta}
	return u, nil
}

// pack returns s but its generation (which the object's metadata keeps) as
// one string: packedMark, a byte 1 when there is a Ready condition (else
// 0), then the target, syncedResourceVersion, and the condition's status,
// reason and message, each as its length (a uvarint) and its bytes, then
// the status's and the condition's observedGeneration, each a varint.
func (s state) pack() string {
	r, present := s.ready, byte(1)
	if r == nil {
		r, present = &condition{}, 0
	}
	fields := []string{s.target, s.synced, r.status, r.reason, r.message}
	n := len(packedMark) + 1 + 2*binary.MaxVarintLen64
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, packedMark...)
	b = append(b, present)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendVarint(b, s.observed)
	b = binary.AppendVarint(b, r.observedGeneration)
	return string(b)
}

// unpack returns what Trim packed of u; ok is false when u is not packed
// (or its packing is broken: then u is read whole, and has nothing).
func unpack(u *unstructured.Unstructured) (s state, ok bool) {
	link, _, _ := unstructured.NestedString(u.Object, "metadata", "selfLink")
	p, ok := strings.CutPrefix(link, packedMark)
	if !ok || len(p) == 0 {
		return state{}, false
	}
	present := p[0] == 1
	p = p[1:]
	fields := make([]string, 5)
	for i := range fields {
		l, w := binary.Uvarint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(p)-w) < l {
			return state{}, false
		}
		fields[i], p = p[w:w+int(l)], p[w+int(l):]
	}
	observed, w := binary.Varint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
	if w <= 0 {
		return state{}, false
	}
	p = p[w:]
	readyObserved, w := binary.Varint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
	if w <= 0 {
		return state{}, false
	}
	s = state{target: fields[0], generation: u.GetGeneration(), observed: observed, synced: fields[1]}
	if present {
		s.ready = &condition{status: fields[2], reason: fields[3], message: fields[4], observedGeneration: readyObserved}
	}
	return s, true
}
