package maintenance_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/maintenance"
)

// at reads an RFC 3339 time: its offset says which of two readings of a
// clock that falls back is meant.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("test time %q: %v", s, err)
	}
	return v
}

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string // String of the Window
		wantErr string
	}{
		"nothing is no window":                               {in: "", want: ""},
		"blanks are no window":                               {in: "  \t ", want: ""},
		"five fields, a duration and a zone":                 {in: "0 2 * * 1-5 2h Europe/Berlin", want: "0 2 * * 1-5 2h Europe/Berlin"},
		"no zone is UTC":                                     {in: "0 2 * * 1-5 2h", want: "0 2 * * 1-5 2h UTC"},
		"blanks between fields are one space":                {in: " 0\t2  * * 1-5   90m  ", want: "0 2 * * 1-5 1h30m UTC"},
		"a duration keeps the units that are not zero":       {in: "*/15 * * * * 1m30s", want: "*/15 * * * * 1m30s UTC"},
		"a duration under a second":                          {in: "* * * * * 500ms", want: "* * * * * 500ms UTC"},
		"names of months and days":                           {in: "0 22 * JAN-MAR SAT,SUN 6h Asia/Tokyo", want: "0 22 * JAN-MAR SAT,SUN 6h Asia/Tokyo"},
		"a descriptor stands for the five fields":            {in: "@daily 1h Europe/Berlin", want: "@daily 1h Europe/Berlin"},
		"a duration longer than the schedule's period":       {in: "0 * * * * 3h", want: "0 * * * * 3h UTC"},
		"29 February exists":                                 {in: "0 0 29 2 * 24h", want: "0 0 29 2 * 24h UTC"},
		"30 February on Mondays is every Monday of February": {in: "0 0 30 2 1 1h", want: "0 0 30 2 1 1h UTC"},

		"a schedule of four fields is refused":     {in: "0 2 * * 2h", wantErr: "got 5 fields, want a schedule of 5"},
		"a schedule of six fields is refused":      {in: "0 0 2 * * * 2h", wantErr: "got 7 fields, want a schedule of 5"},
		"a schedule without a duration is refused": {in: "0 2 * * 1-5", wantErr: "got 5 fields"},
		"a schedule alone with a zone is refused":  {in: "0 2 * * MON Europe/Berlin", wantErr: "got 6 fields"},
		"a zone alone is refused":                  {in: "Europe/Berlin", wantErr: "got 1 fields"},
		"a word after the zone is refused":         {in: "0 2 * * 1-5 2h Europe/Berlin now", wantErr: "got 8 fields"},
		"an hour out of range names its field":     {in: "0 24 * * * 1h", wantErr: `field 2 (hour) "24": end of range (24) above maximum (23)`},
		"a day of month out of range":              {in: "0 2 32 * * 1h", wantErr: `field 3 (day of month) "32"`},
		"a word that is no value names its field":  {in: "0 2 * foo * 1h", wantErr: `field 4 (month) "foo"`},
		"day 7 is not Sunday":                      {in: "0 2 * * 7 1h", wantErr: `field 5 (day of week) "7"`},
		"a step of zero":                           {in: "*/0 2 * * * 1h", wantErr: `field 1 (minute) "*/0"`},
		"a range backwards":                        {in: "0 5-2 * * * 1h", wantErr: `field 2 (hour) "5-2"`},
		"a day that never exists":                  {in: "0 0 30 2 * 1h", wantErr: `schedule "0 0 30 2 *" names no day that exists`},
		"an unknown descriptor":                    {in: "@fortnightly 1h", wantErr: `"@fortnightly" is not a descriptor`},
		"@every names no time of the clock":        {in: "@every 1h 30m", wantErr: "@every is not accepted"},
		"a descriptor with fields":                 {in: "@daily 2 1h", wantErr: "got 3 fields"},
		"cron's zone prefix":                       {in: "CRON_TZ=Europe/Berlin 2 * * * 1h", wantErr: "the time zone goes after the duration"},
		"a duration without a unit":                {in: "0 2 * * * 2", wantErr: `duration "2": time: missing unit`},
		"a duration of an unknown unit":            {in: "0 2 * * * 2y", wantErr: `duration "2y"`},
		"a zero duration":                          {in: "0 2 * * * 0s", wantErr: `duration "0s" is not positive`},
		"a bare zero duration":                     {in: "0 2 * * * 0", wantErr: `duration "0" is not positive`},
		"a negative duration":                      {in: "0 2 * * * -1h", wantErr: `duration "-1h" is not positive`},
		"an unknown zone":                          {in: "0 2 * * * 1h Mars/Olympus", wantErr: `time zone "Mars/Olympus": unknown time zone Mars/Olympus`},
		"a zone that is a path is no zone":         {in: "0 2 * * * 1h ../etc/passwd", wantErr: "got 7 fields"},
		"a zone with dots":                         {in: "0 2 * * * 1h Europe/../Berlin", wantErr: `time zone "Europe/../Berlin"`},
		"the machine's zone":                       {in: "0 2 * * * 1h Local", wantErr: `time zone "Local" is the machine's`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w, err := maintenance.Parse(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(w.String()).To(Equal(tc.want))
			g.Expect(w.IsZero()).To(Equal(tc.want == ""))
			again, err := maintenance.Parse(w.String())
			g.Expect(err).NotTo(HaveOccurred(), "String reads back")
			g.Expect(again.String()).To(Equal(w.String()))
		})
	}
}

func TestOpen(t *testing.T) {
	tests := map[string]struct {
		window string
		t      string // RFC 3339
		open   bool
		next   string // RFC 3339; t itself when open
	}{
		// Inside, outside and the boundary instants, in UTC (no zone).
		"the opening instant is open": {
			window: "0 2 * * * 2h", t: "2025-06-02T02:00:00Z", open: true,
		},
		"the last instant before the closing is open": {
			window: "0 2 * * * 2h", t: "2025-06-02T03:59:59.999999999Z", open: true,
		},
		"the closing instant is closed, and the next window opens the next day": {
			window: "0 2 * * * 2h", t: "2025-06-02T04:00:00Z", next: "2025-06-03T02:00:00Z",
		},
		"the instant before the opening is closed": {
			window: "0 2 * * * 2h", t: "2025-06-02T01:59:59.999999999Z", next: "2025-06-02T02:00:00Z",
		},
		"no zone is UTC, whatever the zone of the time asked about": {
			window: "0 2 * * * 2h", t: "2025-06-02T04:30:00+02:00", open: true,
		},
		"a window is read in its zone": {
			window: "0 2 * * * 2h Asia/Tokyo", t: "2025-06-02T02:30:00Z", next: "2025-06-03T02:00:00+09:00",
		},
		"a window opened long ago is still open within its duration": {
			window: "0 2 1 * * 72h", t: "2025-06-03T23:00:00Z", open: true,
		},

		// Spanning midnight, a month's end, a year's end.
		"a window spanning midnight is open after it": {
			window: "0 23 * * * 2h", t: "2025-06-03T00:30:00Z", open: true,
		},
		"a window spanning midnight closes the next day": {
			window: "0 23 * * * 2h", t: "2025-06-03T01:00:00Z", next: "2025-06-03T23:00:00Z",
		},
		"a window opened on a month's last day is open on the next month's first": {
			window: "0 22 31 * * 4h", t: "2025-02-01T01:00:00Z", open: true,
		},
		"a month without the day named has no window": {
			window: "0 22 31 * * 4h", t: "2025-02-28T23:00:00Z", next: "2025-03-31T22:00:00Z",
		},
		"a window opened on New Year's Eve is open on New Year's Day": {
			window: "0 22 31 12 * 4h", t: "2026-01-01T01:59:00Z", open: true,
		},

		// Weekdays (1 June 2025 is a Sunday).
		"a weekday is open": {
			window: "0 2 * * 1-5 2h Europe/Berlin", t: "2025-06-06T03:00:00+02:00", open: true,
		},
		"a Saturday is closed, and the next window opens on Monday": {
			window: "0 2 * * 1-5 2h Europe/Berlin", t: "2025-06-07T03:00:00+02:00", next: "2025-06-09T02:00:00+02:00",
		},
		"a window that opens on Friday night is open on Saturday morning": {
			window: "0 22 * * FRI 6h", t: "2025-06-07T03:00:00Z", open: true,
		},
		"a window that opens on Friday night is closed on Saturday afternoon": {
			window: "0 22 * * FRI 6h", t: "2025-06-07T15:00:00Z", next: "2025-06-13T22:00:00Z",
		},

		// Europe/Berlin springs forward on 30 March 2025: 02:00 CET is 03:00 CEST.
		"a time the clock skips in spring opens the window when the clock springs forward": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-03-30T01:59:59+01:00", next: "2025-03-30T03:00:00+02:00",
		},
		"the window opened at the spring jump is open from it": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-03-30T03:00:00+02:00", open: true,
		},
		"the window opened at the spring jump lasts its duration": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-03-30T04:00:00+02:00", next: "2025-03-31T02:30:00+02:00",
		},
		"a duration across the spring jump is elapsed time": {
			window: "0 1 * * * 2h Europe/Berlin", t: "2025-03-30T03:59:59+02:00", open: true,
		},
		"a window across the spring jump closes its duration after it opened": {
			window: "0 1 * * * 2h Europe/Berlin", t: "2025-03-30T04:00:00+02:00", next: "2025-03-31T01:00:00+02:00",
		},
		"the day after the spring jump opens at the time named": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-03-31T02:30:00+02:00", open: true,
		},
		"a window opened at the time skipped is open until its duration after the jump": {
			window: "0 2 * * * 2h Europe/Berlin", t: "2025-03-30T04:59:00+02:00", open: true,
		},

		// Europe/Berlin falls back on 26 October 2025: 03:00 CEST is 02:00 CET.
		"a time the clock repeats in autumn opens the window at its first occurrence": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-10-26T02:30:00+02:00", open: true,
		},
		"the window opened at the first occurrence closes at the second": {
			window: "30 2 * * * 1h Europe/Berlin", t: "2025-10-26T02:30:00+01:00", next: "2025-10-27T02:30:00+01:00",
		},
		"the second occurrence opens no window": {
			window: "30 2 * * * 30m Europe/Berlin", t: "2025-10-26T02:40:00+01:00", next: "2025-10-27T02:30:00+01:00",
		},
		"before the second occurrence, the next window is the next day's": {
			window: "30 2 * * * 30m Europe/Berlin", t: "2025-10-26T02:10:00+01:00", next: "2025-10-27T02:30:00+01:00",
		},
		"a duration across the autumn fall is elapsed time": {
			window: "0 2 * * * 2h Europe/Berlin", t: "2025-10-26T02:59:59+01:00", open: true,
		},
		"a window across the autumn fall closes its duration after it opened": {
			window: "0 2 * * * 2h Europe/Berlin", t: "2025-10-26T03:00:00+01:00", next: "2025-10-27T02:00:00+01:00",
		},
		"in the repeated hour, a later time opens when the clock reads it": {
			window: "0 3 * * * 1h Europe/Berlin", t: "2025-10-26T02:30:00+01:00", next: "2025-10-26T03:00:00+01:00",
		},

		// America/Santiago springs forward at midnight on 7 September 2025.
		"a midnight the clock skips opens the window at the jump": {
			window: "0 0 * * * 1h America/Santiago", t: "2025-09-06T23:59:00-04:00", next: "2025-09-07T01:00:00-03:00",
		},
		"a window of a day whose midnight is skipped is open after the jump": {
			window: "0 0 * * 0 1h America/Santiago", t: "2025-09-07T01:30:00-03:00", open: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w, err := maintenance.Parse(tc.window)
			g.Expect(err).NotTo(HaveOccurred())
			when := at(t, tc.t)
			g.Expect(w.Open(when)).To(Equal(tc.open), "Open(%s)", tc.t)
			want := when
			if !tc.open {
				want = at(t, tc.next)
			}
			next := w.Next(when)
			g.Expect(next).To(BeTemporally("==", want), "Next(%s) = %s", tc.t, next)
		})
	}
}

// TestZeroWindowIsAlwaysOpen: no window never holds a rollout.
func TestZeroWindowIsAlwaysOpen(t *testing.T) {
	g := NewWithT(t)
	var w maintenance.Window
	now := at(t, "2025-03-30T02:30:00+01:00")
	g.Expect(w.IsZero()).To(BeTrue())
	g.Expect(w.Open(now)).To(BeTrue())
	g.Expect(w.Next(now)).To(BeTemporally("==", now))
	g.Expect(w.String()).To(BeEmpty())
	g.Expect(w.Duration()).To(BeZero())
}

// TestNextIsTheFirstOpenInstant: minute by minute over the days of both
// Berlin clock changes, Next of a closed minute is the first open minute
// after it, Next of an open one is itself, and a window is open its
// duration a day (elapsed time, the short and the long day alike) but where
// its openings overlap.
func TestNextIsTheFirstOpenInstant(t *testing.T) {
	for _, tc := range []struct {
		window   string
		from     string
		openMins []int // minutes open on each of the three days
	}{
		{"30 2 * * * 1h Europe/Berlin", "2025-03-29T00:00:00+01:00", []int{60, 60, 60}},
		{"0 2 * * * 2h Europe/Berlin", "2025-03-29T00:00:00+01:00", []int{120, 120, 120}},
		{"*/20 2 * * * 10m Europe/Berlin", "2025-03-29T00:00:00+01:00", []int{30, 10, 30}},
		{"30 2 * * * 1h Europe/Berlin", "2025-10-25T00:00:00+02:00", []int{60, 60, 60}},
		{"0 1-3 * * * 30m Europe/Berlin", "2025-10-25T00:00:00+02:00", []int{90, 90, 90}},
		{"0 2 * * * 3h Europe/Berlin", "2025-10-25T00:00:00+02:00", []int{180, 180, 180}},
	} {
		t.Run(tc.window+" from "+tc.from, func(t *testing.T) {
			g := NewWithT(t)
			w, err := maintenance.Parse(tc.window)
			g.Expect(err).NotTo(HaveOccurred())
			start := at(t, tc.from)
			// Three days of the zone's clock, the middle one 23 or 25 hours long.
			loc, _ := time.LoadLocation("Europe/Berlin")
			l := start.In(loc)
			end := time.Date(l.Year(), l.Month(), l.Day()+3, 0, 0, 0, 0, loc)
			var minutes []time.Time
			for m := start; m.Before(end); m = m.Add(time.Minute) {
				minutes = append(minutes, m)
			}
			open := make([]bool, len(minutes))
			perDay := make([]int, 3)
			for i, m := range minutes {
				open[i] = w.Open(m)
				if open[i] {
					day := m.In(loc).Day() - l.Day()
					perDay[day]++
				}
			}
			g.Expect(perDay).To(Equal(tc.openMins), "minutes open each day")
			firstOpen := time.Time{}
			for i := len(minutes) - 1; i >= 0; i-- {
				if open[i] {
					firstOpen = minutes[i]
					g.Expect(w.Next(minutes[i])).To(BeTemporally("==", minutes[i]), "Next of the open %s", minutes[i])
					continue
				}
				if !firstOpen.IsZero() {
					g.Expect(w.Next(minutes[i])).To(BeTemporally("==", firstOpen), "Next of the closed %s", minutes[i])
				}
			}
		})
	}
}

// BenchmarkParse reports the cost of reading a window with a time zone, as
// every reconcile of a workload with one does (its annotation, or its
// Namespace's). `go test -run - -bench Parse -benchmem ./internal/maintenance`.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := maintenance.Parse("0 2 * * 1-5 2h Europe/Berlin"); err != nil {
			b.Fatal(err)
		}
	}
}
