package trim

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/sources"
)

// TestTrimSourceKeepsNoValue: a cached source holds digests, never a value,
// and its labels as a map only when --resource-label-selector needs them,
// packed otherwise.
func TestTrimSourceKeepsNoValue(t *testing.T) {
	for _, keepLabels := range []bool{false, true} {
		g := NewWithT(t)
		meta := metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "7", UID: "u",
			Labels:      map[string]string{"reload": "yes"},
			Annotations: map[string]string{"reloader.stakater.com/match": "true", "note": "n"}}
		s := &corev1.Secret{ObjectMeta: *meta.DeepCopy(), Data: map[string][]byte{"password": []byte("hunter2")}, Type: corev1.SecretTypeOpaque}
		cm := &corev1.ConfigMap{ObjectMeta: *meta.DeepCopy(), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {2}}}
		transform := Sources(keepLabels, dialect.Parser{}.SourceAnnotations(), nil)
		for _, obj := range []any{s, cm} {
			_, err := transform(obj)
			g.Expect(err).NotTo(HaveOccurred())
		}

		g.Expect(sources.Digests(s)).To(Equal(fingerprint.Digests{"password": fingerprint.Sum([]byte("hunter2"))}))
		g.Expect(sources.Digests(cm)).To(Equal(fingerprint.Digests{"a": fingerprint.Sum([]byte("1")), "b": fingerprint.Sum([]byte{2})}))
		g.Expect([]any{s.Data, cm.Data, cm.BinaryData}).To(HaveEach(BeEmpty()), "the values are gone")
		for _, m := range []metav1.ObjectMeta{s.ObjectMeta, cm.ObjectMeta} {
			g.Expect([]string{m.Name, m.Namespace, m.ResourceVersion, string(m.UID)}).To(Equal([]string{"db", "ns", "7", ""}))
			g.Expect(m.Annotations).To(Equal(map[string]string{"reloader.stakater.com/match": "true"}))
			if keepLabels {
				g.Expect(m.Labels).To(Equal(meta.Labels))
				g.Expect(m.GenerateName).To(BeEmpty())
			} else {
				g.Expect(m.Labels).To(BeNil())
				g.Expect(m.GenerateName).To(Equal("reload=yes"), "the labels packed")
			}
		}
		g.Expect(s.Type).To(Equal(corev1.SecretTypeOpaque), "a Secret's type: Helm's releases match no selector")
		g.Expect(sources.Labels(s).Get("reload")).To(Equal("yes"))
		again := s.DeepCopy()
		_, _ = transform(again)
		g.Expect(again).To(Equal(s), "idempotent")
	}
}
