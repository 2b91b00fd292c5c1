package maintenance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// Window is a maintenance window: open from each time its schedule names,
// on its zone's clock, for its duration. The zero Window is no window: it
// is always open.
//
// Times are read on the zone's wall clock, with ISC cron's rule where the
// clock jumps: a time the clock skips in spring (02:30 in Berlin on the last
// Sunday of March) opens the window when the clock springs past it (03:00
// CEST); a time the clock passes twice in autumn (02:30 on the last Sunday
// of October) opens it once, at its first occurrence (02:30 CEST). The
// duration is elapsed time, so a window "0 1 * * * 2h Europe/Berlin" closes
// at 04:00 on the morning the clock springs forward and at 02:00 (CET) on the
// one it falls back.
//
// A duration longer than the time between two openings is accepted: the
// windows overlap, and the window is open while any of them is. One at
// least as long as every gap between openings keeps it open all the time.
//
// A Window is a value, safe to share between goroutines.
type Window struct {
	// schedule is the schedule as written, its fields separated by one space.
	schedule string
	// spec is schedule parsed, searched on a clock without transitions (UTC)
	// that stands for the wall clock of zone.
	spec *cron.SpecSchedule
	// duration is how long the window stays open, positive.
	duration time.Duration
	// zone is the time zone of the schedule.
	zone *time.Location
}

// fields name the five fields of a schedule, in order.
var fields = [...]string{"minute", "hour", "day of month", "month", "day of week"}

// descriptors are the shorthands accepted in place of the five fields, as
// robfig/cron names them: each is one time a year, month, week, day or hour.
var descriptors = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// Parse reads a maintenance window: a schedule, a duration and an optional
// time zone, separated by blanks.
//
//   - The schedule is five cron fields, minute (0-59), hour (0-23), day of
//     month (1-31), month (1-12 or JAN-DEC) and day of week (0-6 or SUN-SAT,
//     Sunday is 0), each "*", a value, a range "a-b", a step "*/n" or "a-b/n",
//     or a comma list of them; when both days are restricted, either may
//     match (cron's rule). In place of the five fields, one of @yearly,
//     @annually, @monthly, @weekly, @daily (@midnight) or @hourly. @every is
//     refused: it counts from whenever it is asked, not from the clock.
//   - The duration is Go's (time.ParseDuration: "2h", "90m", "1h30m"),
//     positive.
//   - The zone is an IANA name (time.LoadLocation: "Europe/Berlin"); UTC
//     when absent. "Local" is refused: it would be the zone of the machine
//     nudge runs on.
//
// "" (or blanks only) is the zero Window, which is always open. Any other
// error names the fault: the count of fields, "field N (name) ...", the
// schedule naming no time that exists ("0 0 30 2 *"), "duration ...", or
// "time zone ...", wrapping the error of the parser that refused it.
func Parse(s string) (Window, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return Window{}, nil
	}
	// A zone starts with a letter, a duration with a digit, a sign or a dot.
	zoneName := ""
	if last := []rune(words[len(words)-1]); unicode.IsLetter(last[0]) {
		zoneName, words = words[len(words)-1], words[:len(words)-1]
	}
	if len(words) < 2 {
		return Window{}, errCount(s)
	}
	durationText, sched := words[len(words)-1], words[:len(words)-1]
	if first := sched[0]; strings.HasPrefix(first, "TZ=") || strings.HasPrefix(first, "CRON_TZ=") {
		return Window{}, fmt.Errorf("%q: the time zone goes after the duration, as a name alone", first)
	}
	if first := sched[0]; strings.HasPrefix(first, "@") {
		if first == "@every" {
			return Window{}, errors.New("@every is not accepted: it names no time of the clock")
		}
		if len(sched) != 1 {
			return Window{}, errCount(s)
		}
		found := false
		for _, d := range descriptors {
			found = found || d == first
		}
		if !found {
			return Window{}, fmt.Errorf("%q is not a descriptor: want one of %s or five fields", first, strings.Join(descriptors, ", "))
		}
	} else if len(sched) != len(fields) {
		return Window{}, errCount(s)
	}
	spec, err := parseSchedule(sched)
	if err != nil {
		return Window{}, err
	}

	d, err := time.ParseDuration(durationText)
	if err != nil {
		return Window{}, fmt.Errorf("duration %q: %w", durationText, err)
	}
	if d <= 0 {
		return Window{}, fmt.Errorf("duration %q is not positive", durationText)
	}

	zone := time.UTC
	if zoneName == "Local" {
		return Window{}, errors.New(`time zone "Local" is the machine's: name the zone`)
	}
	if zoneName != "" {
		if zone, err = loadLocation(zoneName); err != nil {
			return Window{}, fmt.Errorf("time zone %q: %w", zoneName, err)
		}
	}
	return Window{schedule: strings.Join(sched, " "), spec: spec, duration: d, zone: zone}, nil
}

// zones holds the time zones loadLocation loaded, by name: a zone is read
// from the system's (or Go's embedded) tz database, tens of microseconds
// and several file reads, and every reconcile of a workload with a window
// reads it again. Only zones that exist are kept, so it holds at most the
// database's few hundred names.
var zones sync.Map // string → *time.Location

// loadLocation is time.LoadLocation, each zone loaded once.
func loadLocation(name string) (*time.Location, error) {
	if z, ok := zones.Load(name); ok {
		return z.(*time.Location), nil
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, z)
	return z, nil
}

// errCount is the error of a window with too many or too few words.
func errCount(s string) error {
	return fmt.Errorf("got %d fields, want a schedule of 5 (minute hour day-of-month month day-of-week) or a descriptor (@daily), a duration and an optional time zone", len(strings.Fields(s)))
}

// parseSchedule parses the words of a schedule with robfig/cron's standard
// parser; an error names the first field it refuses.
func parseSchedule(words []string) (*cron.SpecSchedule, error) {
	text := strings.Join(words, " ")
	parsed, err := cron.ParseStandard(text)
	if err != nil {
		if len(words) == len(fields) {
			for i, word := range words {
				alone := []string{"*", "*", "*", "*", "*"}
				alone[i] = word
				if _, ferr := cron.ParseStandard(strings.Join(alone, " ")); ferr != nil {
					return nil, fmt.Errorf("field %d (%s) %q: %w", i+1, fields[i], word, ferr)
				}
			}
		}
		return nil, fmt.Errorf("schedule %q: %w", text, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok { // only @every parses to another type, refused above
		return nil, fmt.Errorf("schedule %q names no time of the clock", text)
	}
	// Searched on a clock without transitions: the zone's wall clock read
	// as if it were UTC (see Window.opening).
	spec.Location = time.UTC
	// 2000 is a leap year: a schedule that names a time that exists (29
	// February included) names one within robfig/cron's search of five years.
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("schedule %q names no day that exists", text)
	}
	return spec, nil
}

// IsZero reports whether w is the zero Window, no window: always open.
func (w Window) IsZero() bool { return w.spec == nil }

// Duration returns how long the window stays open from each opening; 0 for
// the zero Window.
func (w Window) Duration() time.Duration { return w.duration }

// Open reports whether t is inside the window: whether it opened at or
// before t, less than its duration before. The opening instant is open, the
// closing instant closed. The zero Window is always open.
func (w Window) Open(t time.Time) bool {
	if w.IsZero() {
		return true
	}
	opened := w.opening(t.Add(-w.duration))
	return !opened.IsZero() && !opened.After(t)
}

// Next returns t itself when the window is open at t, else the instant it
// next opens after t, in the window's zone. The zero Window is always open,
// so it returns t. It returns the zero time when the schedule names no time in
// the five years after t (robfig/cron's search): a schedule of 29 February
// only, from March 2097 (2100 is no leap year).
func (w Window) Next(t time.Time) time.Time {
	if w.Open(t) {
		return t
	}
	return w.opening(t)
}

// String returns the window in canonical form, which Parse reads back to
// the same Window: the schedule's fields separated by one space, the
// duration in Go's form without zero units ("2h", "1h30m"), and the zone,
// always named ("UTC" too). The zero Window is "".
func (w Window) String() string {
	if w.IsZero() {
		return ""
	}
	d := w.duration.String()
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	return w.schedule + " " + d + " " + w.zone.String()
}

// opening returns the first instant after t at which the window opens, or
// the zero time when there is none within five years.
//
// The schedule is searched on the zone's wall clock, written as a UTC time
// (a clock with no transitions): the first reading r after every reading
// the clock showed up to t, then the first instant the clock reads r or
// later.
func (w Window) opening(t time.Time) time.Time {
	r := w.spec.Next(w.shown(t))
	if r.IsZero() {
		return r
	}
	return w.first(r)
}

// wall returns the reading of the zone's clock at t, as a UTC time.
func (w Window) wall(t time.Time) time.Time {
	_, offset := t.In(w.zone).Zone()
	return t.Add(time.Duration(offset) * time.Second).UTC()
}

// shown returns the latest reading the zone's clock showed at or before t:
// its reading at t but in the hour after the clock fell back, which it
// already showed before, where it is the reading just before the fall.
func (w Window) shown(t time.Time) time.Time {
	r := w.wall(t)
	if start, _ := t.In(w.zone).ZoneBounds(); !start.IsZero() {
		if before := w.wall(start.Add(-time.Nanosecond)); before.After(r) {
			return before
		}
	}
	return r
}

// first returns the first instant the zone's clock reads r (a UTC time) or
// later: the instant of r; the earlier of the two when the clock passes r
// twice (falling back); the instant the clock sprang past r when it skips
// it.
func (w Window) first(r time.Time) time.Time {
	var found, latest time.Time
	// The offsets in force around r: zones change theirs months apart, and
	// no offset is more than 14 hours from UTC.
	for _, around := range []time.Duration{-15 * time.Hour, 0, 15 * time.Hour} {
		_, offset := r.Add(around).In(w.zone).Zone()
		at := r.Add(-time.Duration(offset) * time.Second)
		if w.wall(at).Equal(r) && (found.IsZero() || at.Before(found)) {
			found = at
		}
		if at.After(latest) {
			latest = at
		}
	}
	if !found.IsZero() {
		return found.In(w.zone)
	}
	// Skipped: the latest candidate, read with the offset before the jump,
	// lies after it; its zone period starts at the jump.
	start, _ := latest.In(w.zone).ZoneBounds()
	return start
}
