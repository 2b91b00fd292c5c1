package dialect

import (
	"fmt"
	"strings"
)

// ErrMalformed is wrapped by every error Parse returns: an annotation value
// nudge cannot read. The more precise sentinels below all satisfy
// errors.Is(err, ErrMalformed).
var ErrMalformed error = &malformed{"malformed annotation"}

// Precise sentinels for malformed annotation values.
var (
	// ErrNotBool: a boolean annotation holds something other than "true"
	// or "false" (in any case).
	ErrNotBool error = &malformed{`want "true" or "false"`}
	// ErrBadPattern: an entry of a Reloader list is not a valid regular
	// expression (Go RE2 syntax).
	ErrBadPattern error = &malformed{"invalid regular expression"}
	// ErrBadName: an entry of a name list is not a valid object name (a DNS
	// subdomain), or its namespace part is not a valid namespace (a DNS
	// label), or it has more than one "/"; or an entry of a Reloader list
	// without regular-expression characters is not a valid object name, so
	// it could match nothing.
	ErrBadName error = &malformed{"invalid name"}
	// ErrBadDuration: a duration annotation is not a Go duration
	// (time.ParseDuration) or is negative.
	ErrBadDuration error = &malformed{"invalid duration"}
	// ErrBadNumber: a count annotation is not a non-negative integer.
	ErrBadNumber error = &malformed{"invalid number"}
	// ErrBadSchedule: a maintenance window is not maintenance.Parse's format.
	ErrBadSchedule error = &malformed{"invalid maintenance window"}
	// ErrBadStrategy: nudge.dev/rollout-strategy is neither "evict" nor
	// "rollout".
	ErrBadStrategy error = &malformed{"invalid rollout strategy"}
)

// malformed is the type of the sentinels: each one is also ErrMalformed.
type malformed struct{ msg string }

func (e *malformed) Error() string { return e.msg }

func (e *malformed) Is(target error) bool { return target == ErrMalformed }

// AnnotationError reports every problem found in one annotation of one
// workload, so that a caller can emit one Warning Event per bad annotation.
// Err wraps one sentinel per bad value or entry (see ErrMalformed); the
// annotation was ignored as a whole for booleans and durations, and only the
// bad entries were skipped for lists.
type AnnotationError struct {
	// Annotation is the annotation's name, e.g. "reloader.stakater.com/auto".
	Annotation string
	// Template is true when the annotation was read from the pod template's
	// annotations rather than the workload's metadata.
	Template bool
	// Err describes what is wrong, naming the bad value.
	Err error
}

// Error returns `annotation "<name>" in the <place>: <problems>`, the
// problems separated by "; ".
func (e *AnnotationError) Error() string {
	place := "workload metadata"
	if e.Template {
		place = "pod template"
	}
	return fmt.Sprintf("annotation %q in the %s: %v", e.Annotation, place, e.Err)
}

// Unwrap returns Err.
func (e *AnnotationError) Unwrap() error { return e.Err }

// entryErrors holds the problems of several entries of one list annotation.
type entryErrors []error

func (e entryErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e entryErrors) Unwrap() []error { return e }

// joinEntries returns nil, the only error, or all of them as one error.
func joinEntries(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return entryErrors(errs)
	}
}

// notBool, badPattern, badName and badDuration describe one bad value.
func notBool(value string) error { return fmt.Errorf("%w, got %q", ErrNotBool, value) }

func badPattern(entry string, err error) error {
	return fmt.Errorf("%w %q: %v", ErrBadPattern, entry, err)
}

func badName(entry, why string) error { return fmt.Errorf("%w %q: %s", ErrBadName, entry, why) }

func badDuration(value, why string) error {
	return fmt.Errorf("%w %q: %s", ErrBadDuration, value, why)
}

var _ error = (*AnnotationError)(nil)
