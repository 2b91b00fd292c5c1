package workload_test

import (
	"testing"
	"time"

	"nudge.dev/nudge/internal/workload"
)

// FuzzParseRollouts reads any nudge.dev/rollouts value: ParseRollouts never
// panics and returns only times after the epoch, which FormatRollouts
// writes back to a value read as the same times.
func FuzzParseRollouts(f *testing.F) {
	for _, s := range []string{"1767225600,1767229200", " 1767225600 , x,-5,0,", "", "9223372036854775807", "1,2,3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ts := workload.ParseRollouts(v)
		for _, ts := range ts {
			if ts.Unix() <= 0 {
				t.Fatalf("ParseRollouts(%q) holds %v", v, ts)
			}
		}
		written := workload.FormatRollouts(ts)
		again := workload.ParseRollouts(written)
		if len(again) != len(ts) {
			t.Fatalf("ParseRollouts(%q) = %v; written %q, read back as %v", v, ts, written, again)
		}
		for i := range ts {
			if !again[i].Equal(ts[i]) {
				t.Fatalf("ParseRollouts(%q) = %v; written %q, read back as %v", v, ts, written, again)
			}
		}
	})
}

// FuzzParseHeld reads any nudge.dev/held value: ParseHeld never panics, and
// a Held it reads is written by String to a value it reads as the same
// Held, which String writes again byte for byte.
func FuzzParseHeld(f *testing.F) {
	since, until := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)
	f.Add(workload.Held{Reason: "RolloutStorm", Since: since, Until: until, Sources: "ConfigMap shop/app"}.String())
	f.Add(workload.Held{Reason: "MaintenanceWindow", Since: since, Until: until, Sources: "Secret shop/db, ConfigMap shop/app"}.String())
	f.Add("RolloutStorm since 2026-01-01T10:00:00+02:00 until 2026-01-01T11:00:00Z: ")
	f.Add("RolloutStorm since x until y: z")
	f.Add("no colon")
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := workload.ParseHeld(v)
		if !ok {
			return
		}
		written := h.String()
		again, ok := workload.ParseHeld(written)
		if !ok || again.Reason != h.Reason || !again.Since.Equal(h.Since) || !again.Until.Equal(h.Until) || again.Sources != h.Sources {
			t.Fatalf("ParseHeld(%q) = %+v; written %q, read back as %+v, %v", v, h, written, again, ok)
		}
		if twice := again.String(); twice != written {
			t.Fatalf("String is not stable: %q then %q", written, twice)
		}
	})
}
