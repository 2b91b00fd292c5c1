package binding

import (
	"time"
)

// Conflict limits: a bound field another field manager overwrites
// ConflictLimit times within ConflictWindow stops its binding.
const (
	ConflictLimit  = 3
	ConflictWindow = 10 * time.Minute
)

// Action is what the reconciler does with a binding's target.
type Action int

// The actions Decide returns.
const (
	// None: the target holds every value; nothing is written to it.
	None Action = iota
	// Apply: write the bound fields by server-side apply.
	Apply
	// Stop: another field manager keeps overwriting a bound field; nothing is
	// written until the binding or a source changes (Ready=False, Conflict).
	Stop
)

var actionNames = [...]string{"None", "Apply", "Stop"}

// String returns the action's name.
func (a Action) String() string { return actionNames[a] }

// Field is what Decide needs to know about one bound field of the target.
type Field struct {
	// Path is the field path, as the binding writes it.
	Path string
	// Skipped: the field's source or key is optional and missing, so the
	// apply leaves the field out (removing it if nudge alone owned it).
	Skipped bool
	// Matches: the target's field is the source's value (see Matches).
	Matches bool
	// Owned: nudge's field manager owns the field in the target's
	// managedFields. Server-side apply takes a field from its managers when
	// another manager changes its value, so an owned field still has the
	// value nudge applied last.
	Owned bool
	// Owner is the field manager that owns the field when nudge does not, or
	// the one that wrote the target last when nobody owns it; "" if unknown.
	Owner string
}

// Input is what Decide needs to know about one binding.
type Input struct {
	// Generation and ObservedGeneration are the binding's
	// metadata.generation and status.observedGeneration.
	Generation, ObservedGeneration int64
	// Applied is status.appliedFingerprint: what the target held for
	// ObservedGeneration. Desired is the fingerprint of the sources now.
	Applied, Desired string
	// Stopped: the binding's Ready condition has reason Conflict.
	Stopped bool
	// Fields are the bound fields, in the binding's order.
	Fields []Field
	// Overwrites are the times another manager overwrote each field (by
	// Path) since the binding or a source last changed.
	Overwrites map[string][]time.Time
	// Now is the current time.
	Now time.Time
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Overwritten are the paths of the fields another manager overwrote
	// since nudge applied them (to add to Input.Overwrites with Now).
	Overwritten []string
	// Field and Manager are, for Stop, the field overwritten ConflictLimit
	// times and the manager that did it last.
	Field, Manager string
	// Reset: the binding or a source changed, so earlier overwrites no
	// longer count.
	Reset bool
}

// Current reports whether nothing changed on nudge's side since the target
// last held the binding's values: the same generation and the same sources.
func (in Input) Current() bool {
	return in.Generation == in.ObservedGeneration && in.Applied != "" && in.Applied == in.Desired
}

// Decide says what to do with a binding's target. A target that holds every
// value is left alone (at start too: nothing is written). A field that
// differs is applied; if nothing changed on nudge's side it was overwritten
// by another manager, and the ConflictLimit-th overwrite within
// ConflictWindow stops the binding. A stopped binding stays stopped until its
// generation or a source changes.
func Decide(in Input) Decision {
	current := in.Current()
	if in.Stopped && current {
		return Decision{Action: Stop}
	}
	d := Decision{Reset: !current}
	apply := false
	for _, f := range in.Fields {
		if f.Skipped {
			apply = apply || f.Owned
			continue
		}
		if f.Matches || (current && f.Owned) {
			continue
		}
		apply = true
		if !current {
			continue
		}
		d.Overwritten = append(d.Overwritten, f.Path)
		n := 1
		for _, t := range in.Overwrites[f.Path] {
			if in.Now.Sub(t) < ConflictWindow {
				n++
			}
		}
		if n >= ConflictLimit && d.Field == "" {
			d.Field, d.Manager = f.Path, f.Owner
		}
	}
	switch {
	case d.Field != "":
		d.Action = Stop
	case apply:
		d.Action = Apply
	}
	return d
}
