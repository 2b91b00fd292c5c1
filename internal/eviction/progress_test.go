package eviction_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/eviction"
)

func TestParseProgress(t *testing.T) {
	since := time.Date(2026, 11, 29, 7, 0, 0, 123456789, time.UTC)
	tests := map[string]struct {
		value string
		want  eviction.Progress
		bad   bool
	}{
		"a restart just begun holds its change alone": {
			value: "since=2026-11-29T07:00:00.123456789Z",
			want:  eviction.Progress{Since: since},
		},
		"every field is read": {
			value: "since=2026-11-29T07:00:00.123456789Z pods=3 evicted=2026-11-29T07:00:05Z blocked=web-pdb halted=true",
			want:  eviction.Progress{Since: since, Pods: 3, Evicted: since.Truncate(time.Minute).Add(5 * time.Second), Blocked: "web-pdb", Halted: true},
		},
		"a field a later nudge adds is skipped": {
			value: "since=2026-11-29T07:00:00.123456789Z wave=2",
			want:  eviction.Progress{Since: since},
		},
		"no since is refused":                        {value: "pods=3", bad: true},
		"an empty value is refused":                  {value: "", bad: true},
		"a field without = is refused":               {value: "since=2026-11-29T07:00:00Z halted", bad: true},
		"a field given twice is refused":             {value: "since=2026-11-29T07:00:00Z since=2026-11-29T08:00:00Z", bad: true},
		"a bad time is refused":                      {value: "since=yesterday", bad: true},
		"a negative count is refused":                {value: "since=2026-11-29T07:00:00Z pods=-1", bad: true},
		"a budget that is no object name is refused": {value: "since=2026-11-29T07:00:00Z blocked=Web_PDB", bad: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := eviction.ParseProgress(tc.value)
			if tc.bad {
				g.Expect(err).To(MatchError(eviction.ErrMalformed))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Since.Equal(tc.want.Since)).To(BeTrue(), "since")
			g.Expect(p.Evicted.Equal(tc.want.Evicted)).To(BeTrue(), "evicted")
			g.Expect([]any{p.Pods, p.Blocked, p.Halted}).To(Equal([]any{tc.want.Pods, tc.want.Blocked, tc.want.Halted}))
		})
	}
}

// FuzzParseProgress holds that any value a user may write is read without
// a panic, and that what is read is written back to a value read the same.
func FuzzParseProgress(f *testing.F) {
	f.Add("since=2026-11-29T07:00:00.123456789Z pods=3 evicted=2026-11-29T07:00:05Z blocked=web-pdb halted=true")
	f.Add("since=2026-11-29T07:00:00Z")
	f.Add("since= pods==")
	f.Fuzz(func(t *testing.T, v string) {
		p, err := eviction.ParseProgress(v)
		if err != nil {
			return
		}
		again, err := eviction.ParseProgress(p.String())
		if err != nil {
			t.Fatalf("%q read as %+v, written as %q, which does not read: %v", v, p, p.String(), err)
		}
		if !again.Since.Equal(p.Since) || !again.Evicted.Equal(p.Evicted) || again.Pods != p.Pods || again.Blocked != p.Blocked || again.Halted != p.Halted {
			t.Fatalf("%q read as %+v, written as %q, read back as %+v", v, p, p.String(), again)
		}
	})
}
