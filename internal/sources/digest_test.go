package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
)

// TestDigestSourceKeepsNoValue: a cached source holds digests, never a value,
// and its labels only when --resource-label-selector needs them.
func TestDigestSourceKeepsNoValue(t *testing.T) {
	for _, keepLabels := range []bool{false, true} {
		g := NewWithT(t)
		meta := metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "7", UID: "u",
			Labels:      map[string]string{"reload": "yes"},
			Annotations: map[string]string{"reloader.stakater.com/match": "true", "note": "n"}}
		s := &corev1.Secret{ObjectMeta: *meta.DeepCopy(), Data: map[string][]byte{"password": []byte("hunter2")}}
		cm := &corev1.ConfigMap{ObjectMeta: *meta.DeepCopy(), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {2}}}
		transform := DigestSource(keepLabels, dialect.Parser{}.SourceAnnotations())
		for _, obj := range []any{s, cm} {
			_, err := transform(obj)
			g.Expect(err).NotTo(HaveOccurred())
		}

		g.Expect(s.Data).To(Equal(map[string][]byte{"password": []byte(fingerprint.Sum([]byte("hunter2")))}))
		g.Expect(cm.Data).To(Equal(map[string]string{"a": fingerprint.Sum([]byte("1")), "b": fingerprint.Sum([]byte{2})}))
		g.Expect(cm.BinaryData).To(BeNil())
		for _, m := range []metav1.ObjectMeta{s.ObjectMeta, cm.ObjectMeta} {
			g.Expect([]string{m.Name, m.Namespace, m.ResourceVersion, string(m.UID)}).To(Equal([]string{"db", "ns", "7", ""}))
			g.Expect(m.Annotations).To(Equal(map[string]string{"reloader.stakater.com/match": "true"}))
			if keepLabels {
				g.Expect(m.Labels).To(Equal(meta.Labels))
			} else {
				g.Expect(m.Labels).To(BeNil())
			}
		}
		again := s.DeepCopy()
		_, _ = transform(again)
		g.Expect(again).To(Equal(s), "idempotent")
	}
}
