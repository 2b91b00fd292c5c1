package sources

import (
	"maps"
	"strings"
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
		transform := DigestSource(keepLabels, dialect.Parser{}.SourceAnnotations(), nil)
		for _, obj := range []any{s, cm} {
			_, err := transform(obj)
			g.Expect(err).NotTo(HaveOccurred())
		}

		g.Expect(Digests(s)).To(Equal(fingerprint.Digests{"password": fingerprint.Sum([]byte("hunter2"))}))
		g.Expect(Digests(cm)).To(Equal(fingerprint.Digests{"a": fingerprint.Sum([]byte("1")), "b": fingerprint.Sum([]byte{2})}))
		g.Expect([]any{s.Data, cm.Data, cm.BinaryData}).To(HaveEach(BeEmpty()), "the values are gone")
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

// TestDigestsPacked: the digests read back from a digested source are those
// of its values, whatever the keys; equal content compares equal, and any
// changed, added or removed key changes it.
func TestDigestsPacked(t *testing.T) {
	long := strings.Repeat("k", 300) // a key length of two uvarint bytes
	cases := map[string]map[string]string{
		"no data":  {},
		"one key":  {"a": "1"},
		"long key": {long: "x", "b": ""},
		"many":     {"a": "1", "b": "2", "c": strings.Repeat("v", 8192), "d.e_f-g": "4"},
	}
	transform := DigestSource(false, nil, nil)
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want := fingerprint.Digests{}
			for k, v := range data {
				want[k] = fingerprint.SumString(v)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: maps.Clone(data)}
			g.Expect(Digests(cm)).To(Equal(want), "undigested")
			_, _ = transform(cm)
			g.Expect(Digests(cm)).To(Equal(want), "digested")

			same := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: maps.Clone(data)}
			g.Expect(ContentChanged(cm, same)).To(BeFalse(), "digested against undigested")
			_, _ = transform(same)
			g.Expect(ContentChanged(cm, same)).To(BeFalse())

			for _, edit := range []func(map[string]string){
				func(d map[string]string) { d["new"] = "" },
				func(d map[string]string) { maps.DeleteFunc(d, func(k, _ string) bool { return k == "a" || k == long }) },
				func(d map[string]string) {
					for k := range d {
						d[k] += "!"
					}
				},
			} {
				other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: maps.Clone(data)}
				edit(other.Data)
				if maps.Equal(other.Data, data) {
					continue
				}
				_, _ = transform(other)
				g.Expect(ContentChanged(cm, other)).To(BeTrue(), "%v → %v", data, other)
			}
		})
	}
	g := NewWithT(t)
	for _, malformed := range []string{"\x05ab", "\x01a" + strings.Repeat("d", 31), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"} {
		g.Expect(unpackDigests(malformed)).To(BeNil(), "malformed %q", malformed)
	}
	g.Expect(ContentChanged(&corev1.ConfigMap{}, &corev1.Secret{})).To(BeTrue(), "mismatched types")
}
