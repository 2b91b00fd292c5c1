package binding

import (
	"testing"
	"time"

	"nudge.dev/nudge/internal/record"
)

func TestStatusWaitsForTheLull(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name       string
		lull       bool
		lastWrite  time.Duration // before now; 0: none
		appliedAgo time.Duration
		want       bool
	}{
		{"no lull: written at once", false, time.Millisecond, 0, false},
		{"applies go on: waits", true, time.Millisecond, time.Second, true},
		{"quiet for statusQuiet: written", true, statusQuiet, time.Second, false},
		{"no write yet: written", true, 0, 0, false},
		{"applies go on past statusMaxWait: written", true, time.Millisecond, statusMaxWait, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lull *record.Lull
			if tc.lull {
				lull = &record.Lull{}
				if tc.lastWrite > 0 {
					lull.Wrote(now.Add(-tc.lastWrite))
				}
			}
			if got := waiting(lull, now.Add(-tc.appliedAgo), now); got != tc.want {
				t.Errorf("waiting = %v, want %v", got, tc.want)
			}
		})
	}
}
