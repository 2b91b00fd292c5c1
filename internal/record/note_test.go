package record

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

func TestEventNote(t *testing.T) {
	tests := map[string]struct {
		note    string
		wantLen int
		cut     bool
	}{
		"a short note is kept":                    {note: "Rolled Deployment web because ConfigMap shop/app changed", wantLen: 56},
		"a note of exactly the limit is kept":     {note: strings.Repeat("a", noteLimit), wantLen: noteLimit},
		"a longer note is cut to the limit":       {note: strings.Repeat("a", 300_000), wantLen: noteLimit, cut: true},
		"a cut never splits a multi-byte rune":    {note: strings.Repeat("é", noteLimit), wantLen: noteLimit, cut: true},
		"a cut never splits a rune of four bytes": {note: "ab" + strings.Repeat("😀", noteLimit), wantLen: noteLimit - 2, cut: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := Note(tc.note)
			g.Expect(got).To(HaveLen(tc.wantLen))
			g.Expect(utf8.ValidString(got)).To(BeTrue())
			if tc.cut {
				g.Expect(got).To(HaveSuffix(noteCut))
				g.Expect(tc.note).To(HavePrefix(strings.TrimSuffix(got, noteCut)))
			} else {
				g.Expect(got).To(Equal(tc.note))
			}
		})
	}
}
