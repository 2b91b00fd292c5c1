package sources

import (
	"maps"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/fingerprint"
)

// digest makes cm as nudge's cache holds it (see trim.Sources): its
// digests in its selfLink, no values.
func digest(cm *corev1.ConfigMap) {
	link, _ := DigestedSelfLink(cm)
	//lint:ignore SA1019 see digestedMark
	*cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, SelfLink: link}}
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
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want := fingerprint.Digests{}
			for k, v := range data {
				want[k] = fingerprint.SumString(v)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: maps.Clone(data)}
			g.Expect(Digests(cm)).To(Equal(want), "undigested")
			digest(cm)
			g.Expect(Digests(cm)).To(Equal(want), "digested")

			same := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: maps.Clone(data)}
			g.Expect(ContentChanged(cm, same)).To(BeFalse(), "digested against undigested")
			digest(same)
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
				digest(other)
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
