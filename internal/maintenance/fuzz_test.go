package maintenance_test

import (
	"testing"
	"time"

	"nudge.dev/nudge/internal/maintenance"
)

// FuzzParse gives Parse any text: it refuses it or returns a Window whose
// String reads back to the same Window, and whose Next agrees with Open at
// instants around both Berlin clock changes and a month's end: Next is t
// when open, else a later instant that is open, the instant before it
// closed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "0 2 * * 1-5 2h Europe/Berlin", "30 2 * * * 1h Europe/Berlin", "*/20 2 * * * 10m Europe/Berlin",
		"0 0 * * 0 1h America/Santiago", "@daily 90m Asia/Tokyo", "0 22 31 * * 4h", "0 0 29 2 * 24h",
		"0 * * * * 3h", "* * * * * 1ns", "0 0 30 2 1 1h", "@every 1h 1h", "TZ=UTC 0 * * * 1h",
		"0 24 * * * 1h", "*/0 * * * * 1h", "0 2 * * * 0", "0 2 * * * 1h Mars/Olympus", "0 2 * * * 1h Local",
		"1-2-3 * * * * 1h", "1/2/3 * * * * 1h", "0,,5 * * * * 1h", "? ? ? ? ? 1h", "\x00 * * * * 1h",
	} {
		f.Add(s)
	}
	instants := []time.Time{
		time.Date(2025, 3, 30, 0, 59, 59, 0, time.UTC),
		time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC),
		time.Date(2025, 10, 26, 0, 30, 0, 0, time.UTC),
		time.Date(2025, 10, 26, 1, 10, 0, 500, time.UTC),
		time.Date(2025, 1, 31, 23, 59, 0, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := maintenance.Parse(s)
		if err != nil {
			return
		}
		again, err := maintenance.Parse(w.String())
		if err != nil || again.String() != w.String() {
			t.Fatalf("Parse(%q).String() = %q, read back as %q, %v", s, w.String(), again.String(), err)
		}
		for _, at := range instants {
			next := w.Next(at)
			switch {
			case next.IsZero():
			case w.Open(at) != next.Equal(at):
				t.Fatalf("%q at %s: Open %v, Next %s", s, at, w.Open(at), next)
			case next.Before(at) || !w.Open(next):
				t.Fatalf("%q at %s: Next %s is before it or closed", s, at, next)
			case next.After(at) && w.Open(next.Add(-time.Nanosecond)):
				t.Fatalf("%q at %s: Next %s, yet open the instant before", s, at, next)
			}
		}
	})
}
