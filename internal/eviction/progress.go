package eviction

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ProgressAnnotation holds, on the owner's metadata, where a restart through
// the Eviction API stands (Progress.String). nudge writes it with the
// rollout that starts the restart and removes it once no pod predates the
// change; a restart or failover of nudge reads it back and resumes.
const ProgressAnnotation = "nudge.dev/restart"

// ErrMalformed is returned by ParseProgress for a value not in
// ProgressAnnotation's form.
var ErrMalformed = errors.New("malformed " + ProgressAnnotation)

// Progress is where a restart stands. Its text form (String) is
// space-separated key=value fields, "since" first and the only one
// required:
//
//	since=2026-11-29T07:00:00.123456789Z pods=3 evicted=2026-11-29T07:00:05Z blocked=web-pdb halted=true
//
// Times are RFC 3339 with nanoseconds, in UTC.
type Progress struct {
	// Since is the change: a pod created before it is restarted, one
	// created at or after it never is.
	Since time.Time
	// Pods is how many pods the owner had when the restart began, the
	// count it restores after each eviction when the owner does not say
	// (see Input.Want); 0 when unknown.
	Pods int
	// Evicted is when the last pod was evicted; zero before the first.
	Evicted time.Time
	// Blocked names the PodDisruptionBudget that refused the last
	// eviction; "" when none did.
	Blocked string
	// Halted says that a replacement was not Ready in time: the restart
	// evicts nothing more until the next change.
	Halted bool
}

// String returns p in ProgressAnnotation's form.
func (p Progress) String() string {
	var b strings.Builder
	b.WriteString("since=" + p.Since.UTC().Format(time.RFC3339Nano))
	if p.Pods > 0 {
		b.WriteString(" pods=" + strconv.Itoa(p.Pods))
	}
	if !p.Evicted.IsZero() {
		b.WriteString(" evicted=" + p.Evicted.UTC().Format(time.RFC3339Nano))
	}
	if p.Blocked != "" {
		b.WriteString(" blocked=" + p.Blocked)
	}
	if p.Halted {
		b.WriteString(" halted=true")
	}
	return b.String()
}

// ParseProgress reads ProgressAnnotation's value v. Fields it does not know
// are skipped (a later nudge may add some); a known field given twice, a
// field without "=", a bad time, count or budget name, or no "since" return
// an error wrapping ErrMalformed. The value is read from an object users can
// edit: anything is refused with an error, never a panic.
func ParseProgress(v string) (Progress, error) {
	var p Progress
	seen := map[string]bool{}
	for _, f := range strings.Fields(v) {
		k, val, ok := strings.Cut(f, "=")
		if !ok || val == "" {
			return Progress{}, fmt.Errorf("%w: field %q is not key=value", ErrMalformed, f)
		}
		if seen[k] {
			return Progress{}, fmt.Errorf("%w: %s given twice", ErrMalformed, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "since":
			p.Since, err = time.Parse(time.RFC3339Nano, val)
		case "evicted":
			p.Evicted, err = time.Parse(time.RFC3339Nano, val)
		case "pods":
			p.Pods, err = strconv.Atoi(val)
			if err == nil && p.Pods < 0 {
				err = errors.New("negative")
			}
		case "blocked":
			if !dnsSubdomain(val) {
				err = errors.New("not an object name")
			}
			p.Blocked = val
		case "halted":
			p.Halted, err = strconv.ParseBool(val)
		}
		if err != nil {
			return Progress{}, fmt.Errorf("%w: %s: %v", ErrMalformed, k, err)
		}
	}
	if p.Since.IsZero() {
		return Progress{}, fmt.Errorf("%w: no since", ErrMalformed)
	}
	return p, nil
}

// dnsSubdomain reports whether s may name a PodDisruptionBudget: at most
// 253 lower-case letters, digits, '-' and '.'.
func dnsSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
