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
		"marks false":   {NudgeIgnore: "false", ReloaderMatch: "False", NudgeUrgent: " false ", NudgePaused: "FALSE"},
		"a mark of yes": {NudgeUrgent: "yes"},
		"paused":        {NudgePaused: "true"},
	} {
		if n := testing.AllocsPerRun(100, func() {
			_, _, _ = Ignored(annotations), Matched(annotations), Urgent(annotations)
			_, _ = Paused(annotations)
		}); n != 0 {
			t.Errorf("%s: reading the marks allocated %.0f times, want none", name, n)
		}
	}
}

func TestPaused(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        bool
		malformed   bool
	}{
		"no annotations are not paused":                  {annotations: nil},
		"nudge.dev/paused true pauses":                   {annotations: map[string]string{NudgePaused: "true"}, want: true},
		"the value is read in any case, trimmed":         {annotations: map[string]string{NudgePaused: " True "}, want: true},
		"false does not pause":                           {annotations: map[string]string{NudgePaused: "false"}},
		"a malformed value does not pause, and says so":  {annotations: map[string]string{NudgePaused: "yes"}, malformed: true},
		"an empty value is malformed":                    {annotations: map[string]string{NudgePaused: ""}, malformed: true},
		"Reloader's pause-period is no pause of nudge's": {annotations: map[string]string{"deployment.reloader.stakater.com/pause-period": "5m"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			paused, err := Paused(tc.annotations)
			g.Expect(paused).To(Equal(tc.want))
			if !tc.malformed {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ErrNotBool))
			g.Expect(err.Error()).To(ContainSubstring(NudgePaused))
		})
	}
}
