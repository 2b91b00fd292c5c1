package workload

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CachedSpecMark begins the selfLink of a pod template in nudge's cache
// whose pod spec is packed there, followed by the spec in Kubernetes'
// protobuf encoding: the cache transform (trim.Workload) trims the spec to
// the references nudge reads, then packs it (PackSpec) into one string of
// about 100 bytes where a container, its envFrom entries and their
// references took about 700. A pod template's selfLink is set by no one (the
// API server no longer sets any), so no real object carries the mark. Kind's
// Template unpacks it (Unpacked): nothing reads the packed form.
const CachedSpecMark = "nudge:podspec:"

// PackSpec returns t with its pod spec packed into its selfLink (see
// CachedSpecMark) and an empty spec; a template whose spec is empty is
// returned as it is. Unpacked(PackSpec(t)) equals t, but for t's selfLink,
// which the packed template does not keep.
func PackSpec(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	if reflect.DeepEqual(t.Spec, corev1.PodSpec{}) {
		return t
	}
	b, err := t.Spec.Marshal()
	if err != nil {
		// Generated code that marshals a struct in memory does not fail;
		// keep the spec as it is if it ever does.
		return t
	}
	t.SetSelfLink(CachedSpecMark + string(b))
	t.Spec = corev1.PodSpec{}
	return t
}

// Unpacked returns t when its spec is not packed (an object as the API
// server serves it, or a nil t); otherwise a new template with t's metadata
// but for the selfLink, and the spec PackSpec packed. Writes to the new
// template do not reach t. A packed spec that does not decode, which
// PackSpec never writes, gives an empty spec.
func Unpacked(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if t == nil {
		return nil
	}
	packed, ok := strings.CutPrefix(t.GetSelfLink(), CachedSpecMark)
	if !ok {
		return t
	}
	out := &corev1.PodTemplateSpec{ObjectMeta: *t.ObjectMeta.DeepCopy()}
	out.SetSelfLink("")
	_ = out.Spec.Unmarshal([]byte(packed))
	return out
}
