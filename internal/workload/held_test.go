package workload

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestRolloutsAnnotation(t *testing.T) {
	a, b := time.Unix(1795000000, 0), time.Unix(1795000060, 0)
	tests := map[string]struct {
		value string
		want  []time.Time
	}{
		"the times read back": {value: FormatRollouts([]time.Time{a, b}), want: []time.Time{a, b}},
		"a time within a second is rounded up": {
			value: FormatRollouts([]time.Time{a.Add(time.Millisecond), b.Add(999 * time.Millisecond)}),
			want:  []time.Time{a.Add(time.Second), b.Add(time.Second)},
		},
		"an empty value holds none":      {value: "", want: nil},
		"a bad entry is skipped":         {value: "1795000000,soon,1795000060", want: []time.Time{a, b}},
		"spaces around entries are kept": {value: " 1795000000 , 1795000060", want: []time.Time{a, b}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ParseRollouts(tc.value)).To(Equal(tc.want))
		})
	}
}

func TestHeldAnnotation(t *testing.T) {
	h := Held{Reason: "RolloutStorm", Since: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
		Until: time.Date(2026, 11, 27, 13, 0, 5, 0, time.UTC), Sources: "ConfigMap shop/app, Secret shop/db"}
	g := NewWithT(t)
	g.Expect(h.String()).To(Equal("RolloutStorm since 2026-11-27T12:00:00Z until 2026-11-27T13:00:05Z: ConfigMap shop/app, Secret shop/db"))
	back, ok := ParseHeld(h.String())
	g.Expect(ok).To(BeTrue())
	g.Expect(back).To(Equal(h))
	for _, bad := range []string{"", "RolloutStorm", "RolloutStorm since then until later: x", "x: y"} {
		_, ok := ParseHeld(bad)
		g.Expect(ok).To(BeFalse(), bad)
	}
}
