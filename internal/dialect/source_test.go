package dialect

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestIgnored(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"no annotations are not ignored":            {annotations: nil, want: false},
		"nudge.dev/ignore true ignores":             {annotations: map[string]string{NudgeIgnore: "true"}, want: true},
		"reloader.stakater.com/ignore true ignores": {annotations: map[string]string{ReloaderIgnore: "true"}, want: true},
		"the value is read in any case":             {annotations: map[string]string{ReloaderIgnore: "True"}, want: true},
		"false does not ignore":                     {annotations: map[string]string{NudgeIgnore: "false"}, want: false},
		"a value other than true does not ignore":   {annotations: map[string]string{NudgeIgnore: "yes"}, want: false},
		"one true of two ignores":                   {annotations: map[string]string{NudgeIgnore: "false", ReloaderIgnore: "true"}, want: true},
		"the match annotation does not ignore":      {annotations: map[string]string{ReloaderMatch: "true"}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Ignored(tc.annotations)).To(Equal(tc.want))
		})
	}
}

func TestMatched(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"no annotations are not matched":           {annotations: nil, want: false},
		"reloader.stakater.com/match true matches": {annotations: map[string]string{ReloaderMatch: "true"}, want: true},
		"the value is read in any case, trimmed":   {annotations: map[string]string{ReloaderMatch: " TRUE"}, want: true},
		"false does not match":                     {annotations: map[string]string{ReloaderMatch: "false"}, want: false},
		"a value other than true does not match":   {annotations: map[string]string{ReloaderMatch: "1"}, want: false},
		"the ignore annotation does not match":     {annotations: map[string]string{ReloaderIgnore: "true"}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Matched(tc.annotations)).To(Equal(tc.want))
		})
	}
}

// TestSourceMarksAllocateNothing: the source handlers read a source's marks
// several times for every event of it, mostly of annotations that are not
// there or say "false"; reading them must not build an error each time (it
// did: a fmt.Errorf per unset mark).
func TestSourceMarksAllocateNothing(t *testing.T) {
	for name, annotations := range map[string]map[string]string{
		"none":          nil,
		"others":        {"app": "web"},
		"marks false":   {NudgeIgnore: "false", ReloaderMatch: "False", NudgeUrgent: " false "},
		"a mark of yes": {NudgeUrgent: "yes"},
	} {
		if n := testing.AllocsPerRun(100, func() {
			_, _, _ = Ignored(annotations), Matched(annotations), Urgent(annotations)
		}); n != 0 {
			t.Errorf("%s: reading the marks allocated %.0f times, want none", name, n)
		}
	}
}
