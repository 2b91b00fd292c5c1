package workload

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/eviction"
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

func TestHeldOver(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 11, 27, 12, min, 0, 0, time.UTC) }
	storm := Held{Reason: "RolloutStorm", Since: at(10), Until: at(30), Sources: "ConfigMap shop/app"}
	for _, c := range []struct {
		name       string
		was        string
		want       Held
		ok, begins bool
	}{
		{name: "no wait before: it begins", was: "", want: storm, ok: true, begins: true},
		{name: "a malformed value: it begins", was: "later", want: storm, ok: true, begins: true},
		{name: "another reason's wait: it begins", was: Held{Reason: "RolloutDeferred", Since: at(0), Until: at(30)}.String(), want: storm, ok: true, begins: true},
		{name: "the same wait, recorded: nothing to write", was: Held{Reason: "RolloutStorm", Since: at(0), Until: at(30)}.String()},
		{name: "the same wait, its end moved: its start kept", was: Held{Reason: "RolloutStorm", Since: at(0), Until: at(20)}.String(),
			want: Held{Reason: "RolloutStorm", Since: at(0), Until: at(30), Sources: "ConfigMap shop/app"}, ok: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			v, ok, begins := storm.Over(c.was)
			g.Expect(ok).To(Equal(c.ok))
			g.Expect(begins).To(Equal(c.begins))
			if c.ok {
				g.Expect(v).To(Equal(c.want.String()))
			} else {
				g.Expect(v).To(BeEmpty())
			}
		})
	}
}

func TestChangeEndHold(t *testing.T) {
	rolled := []time.Time{time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name        string
		annotations map[string]string
		rolled      []time.Time
		want        map[string]*string
	}{
		{name: "nothing held, nothing counted: nothing written", want: map[string]*string{}},
		{name: "a wait ends", annotations: map[string]string{HeldAnnotation: "x"}, want: map[string]*string{HeldAnnotation: nil}},
		{name: "the rollouts counted are written", rolled: rolled, want: map[string]*string{RolloutsAnnotation: ptrTo(FormatRollouts(rolled))}},
		{name: "none left to count: removed", annotations: map[string]string{RolloutsAnnotation: "x"}, want: map[string]*string{RolloutsAnnotation: nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := Change{Annotations: map[string]*string{}}
			ch.EndHold(c.annotations, c.rolled)
			g.Expect(ch.Annotations).To(Equal(c.want))
		})
	}
}

func ptrTo(s string) *string { return &s }

func TestRelease(t *testing.T) {
	for _, c := range []struct {
		name   string
		obj    *metav1.PartialObjectMetadata
		writes bool
	}{
		{name: "no state: no write", obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}},
		{name: "an applied state: dropped", obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AppliedAnnotation: "s"}}}, writes: true},
		{name: "a seal alone: dropped", obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{SealLabel: "x"}}}, writes: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			c.obj.ResourceVersion = "9"
			ch, ok := Release(c.obj)
			g.Expect(ok).To(Equal(c.writes))
			if c.writes {
				g.Expect(ch.ResourceVersion).To(Equal("9"), "guarded by the version read")
				g.Expect(ch.Labels).To(Equal(map[string]*string{SealLabel: nil}))
				g.Expect(ch.Annotations).To(HaveKeyWithValue(AppliedAnnotation, BeNil()))
				g.Expect(ch.Annotations).To(HaveKeyWithValue(eviction.ProgressAnnotation, BeNil()))
				g.Expect(ch.Annotations).To(HaveLen(5))
			}
		})
	}
}
