package sources

import (
	"maps"
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HelmReleaseType is the type of the Secrets in which Helm 3 keeps each
// revision of a release (https://helm.sh/docs/topics/advanced/#storage-backends).
// A label selector never matches one: they carry labels as generic as
// name=<release> and owner=helm, and change with every upgrade, which rolls
// the release's workloads anyway.
const HelmReleaseType corev1.SecretType = "helm.sh/release.v1"

// HelmRelease reports whether obj is a Secret of HelmReleaseType.
func HelmRelease(obj client.Object) bool {
	s, ok := obj.(*corev1.Secret)
	return ok && s.Type == HelmReleaseType
}

// PackedLabels is a source's labels as nudge's cache keeps them when
// --resource-label-selector does not keep them whole (see trim.Sources):
// "key=value" lines, sorted by key. It is a string, one copy shared by
// every source with the same labels (unique.Make), where a map of one
// label costs about 300 bytes a source; a cached source carries it in its
// generateName, a field the API server reads only at a creation (see
// Labels). It reads as labels.Labels for a label selector.
type PackedLabels string

// PackLabels returns m packed, one shared copy of each distinct value.
func PackLabels(m map[string]string) PackedLabels {
	if len(m) == 0 {
		return ""
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + m[k])
	}
	return PackedLabels(unique.Make(b.String()).Value())
}

// Lookup returns the value of label key, and whether there is one.
func (p PackedLabels) Lookup(key string) (value string, exists bool) {
	for line := range strings.SplitSeq(string(p), "\n") {
		if k, v, _ := strings.Cut(line, "="); k == key && line != "" {
			return v, true
		}
	}
	return "", false
}

// Has reports whether there is a label key.
func (p PackedLabels) Has(key string) bool {
	_, ok := p.Lookup(key)
	return ok
}

// Get returns the value of label key, "" when there is none.
func (p PackedLabels) Get(key string) string {
	v, _ := p.Lookup(key)
	return v
}

var _ labels.Labels = PackedLabels("")

// Labels returns the labels of a ConfigMap or Secret, read from the cache or
// the API: its labels when it has them, else those packed in its
// generateName when it is digested (see DigestedSelfLink and PackedLabels),
// else none.
func Labels(obj client.Object) labels.Labels {
	if l := obj.GetLabels(); l != nil || !Digested(obj) {
		return labels.Set(l)
	}
	return PackedLabels(obj.GetGenerateName())
}

// SameLabels reports whether two versions of a source carry the same
// labels, as Labels reads them.
func SameLabels(old, new client.Object) bool {
	return maps.Equal(old.GetLabels(), new.GetLabels()) && old.GetGenerateName() == new.GetGenerateName()
}
