package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Update is one write of new content to a ConfigMap in a window stream: the
// version it wrote (1, 2, … in the order written; 0 is the content the
// ConfigMap was created with) and the resourceVersion the API server
// returned for it. etcd's revision is global, so resourceVersions order the
// writes of every object of the stream.
type Update struct {
	Source  string
	Version int
	RV      int64
	At      time.Time
}

// Rollout is one change of a Deployment's pod template, as a watch saw it:
// its resourceVersion, when the watch delivered it, and the version of each
// source the applied state written with it holds (Unknown for a digest of
// no version the stream wrote; a source missing is unknown too).
type Rollout struct {
	RV    int64
	At    time.Time
	Wrote map[string]int
}

// Unknown is the version of a digest that is of no content the stream wrote.
const Unknown = -1

// History is what happened to one Deployment in a window stream.
type History struct {
	Workload string
	// Sources are the ConfigMaps it reads.
	Sources []string
	// Start is the resourceVersion after which its rollouts count: its
	// baseline, every source at version 0, is recorded before it.
	Start int64
	// Updates are the stream's updates, in any order; those of sources it
	// does not read are ignored.
	Updates []Update
	// Rollouts are its rollouts, in any order; those at or before Start
	// are ignored.
	Rollouts []Rollout
	// Final is the version of each source its applied state holds once the
	// stream settled; nil when it could not be read.
	Final map[string]int
}

// The rules Check holds a window stream's rollouts to.
const (
	// NoChange: no rollout without an update of the Deployment's sources
	// since its previous rollout (or its baseline), in resourceVersion
	// order: the pods it makes read the sources as the previous rollout's
	// did.
	NoChange = "none without a change"
	// Duplicate: no two rollouts write the same content (nor one the
	// baseline's).
	Duplicate = "at most one rollout per distinct content"
	// Lost: once the stream settled, the applied state holds the last
	// version of each source, and the last rollout came after the last
	// update.
	Lost = "nothing lost"
	// Back: no rollout writes a source's version older than an earlier
	// rollout wrote.
	Back = "no rollout back"
	// UnknownContent: every rollout writes, for every source, a digest of
	// content the stream wrote.
	UnknownContent = "known content"
)

// Violation is one breach of a rule by one Deployment.
type Violation struct {
	Workload string
	// Rule is one of NoChange, Duplicate, Lost, Back, UnknownContent.
	Rule string
	// Detail names the rollouts (resourceVersion, time, content written)
	// and the updates involved.
	Detail string
}

func (v Violation) String() string { return v.Workload + ": " + v.Rule + ": " + v.Detail }

// Check returns the violations of the rules by h's rollouts, in the order of
// the rollouts' resourceVersions; none when it kept them all.
func (h History) Check() []Violation {
	c := checker{h: h}
	for _, u := range h.Updates {
		if slices.Contains(h.Sources, u.Source) {
			c.updates = append(c.updates, u)
		}
	}
	slices.SortFunc(c.updates, func(a, b Update) int { return cmp.Compare(a.RV, b.RV) })
	var rollouts []Rollout
	for _, r := range h.Rollouts {
		if r.RV > h.Start {
			rollouts = append(rollouts, r)
		}
	}
	slices.SortFunc(rollouts, func(a, b Rollout) int { return cmp.Compare(a.RV, b.RV) })

	baseline := Rollout{RV: h.Start, Wrote: map[string]int{}}
	for _, s := range h.Sources {
		baseline.Wrote[s] = 0
	}
	prev, written := baseline, []Rollout{baseline}
	highest := map[string]Rollout{} // per source, the earlier rollout that wrote its highest version
	for _, r := range rollouts {
		if unknown := c.unknown(r); len(unknown) > 0 {
			c.add(UnknownContent, "%s: no update wrote what it holds of %s", c.rollout(r), strings.Join(unknown, ", "))
		}
		if len(c.between(prev.RV, r.RV)) == 0 {
			c.add(NoChange, "%s came after %s with no update of %s between them; %s",
				c.rollout(r), c.rollout(prev), strings.Join(h.Sources, ", "), c.around(r))
		}
		for _, w := range written {
			if c.same(w, r) {
				c.add(Duplicate, "%s wrote what %s wrote; updates between them: %s", c.rollout(r), c.rollout(w), c.list(c.between(w.RV, r.RV)))
				break
			}
		}
		for _, s := range h.Sources {
			v, ok := r.Wrote[s]
			if !ok || v == Unknown {
				continue
			}
			if hi, ok := highest[s]; ok && v < hi.Wrote[s] {
				c.add(Back, "%s wrote %s v%d after %s wrote v%d", c.rollout(r), s, v, c.rollout(hi), hi.Wrote[s])
			}
			if hi, ok := highest[s]; !ok || v > hi.Wrote[s] {
				highest[s] = r
			}
		}
		prev, written = r, append(written, r)
	}
	c.lost(rollouts)
	return c.out
}

// checker holds what Check works on.
type checker struct {
	h       History
	updates []Update // of the Deployment's sources, by resourceVersion
	out     []Violation
}

func (c *checker) add(rule, format string, args ...any) {
	c.out = append(c.out, Violation{Workload: c.h.Workload, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// lost checks the end: the last rollout after the last update, and the
// applied state with the last versions.
func (c *checker) lost(rollouts []Rollout) {
	if n := len(c.updates); n > 0 {
		last := c.updates[n-1]
		switch {
		case len(rollouts) == 0:
			c.add(Lost, "no rollout came after its sources' updates, the last %s", c.update(last))
		case rollouts[len(rollouts)-1].RV < last.RV:
			c.add(Lost, "its last rollout, %s, came before the last update of its sources, %s", c.rollout(rollouts[len(rollouts)-1]), c.update(last))
		}
	}
	if c.h.Final == nil {
		c.add(Lost, "its applied state could not be read after the stream settled")
		return
	}
	for _, s := range c.h.Sources {
		want, by := 0, "its creation"
		for _, u := range c.updates {
			if u.Source == s {
				want, by = u.Version, "the last update, "+c.update(u)
			}
		}
		if got, ok := c.h.Final[s]; !ok || got != want {
			c.add(Lost, "after the stream settled its applied state holds %s %s, not v%d of %s", s, version(got, ok), want, by)
		}
	}
}

// unknown returns the sources of which r wrote no known version.
func (c *checker) unknown(r Rollout) []string {
	var out []string
	for _, s := range c.h.Sources {
		if v, ok := r.Wrote[s]; !ok || v == Unknown {
			out = append(out, s)
		}
	}
	return out
}

// same reports whether a and b wrote the same known version of every source.
func (c *checker) same(a, b Rollout) bool {
	for _, s := range c.h.Sources {
		va, oka := a.Wrote[s]
		vb, okb := b.Wrote[s]
		if !oka || !okb || va == Unknown || va != vb {
			return false
		}
	}
	return true
}

// between returns the updates with a resourceVersion in (from, to).
func (c *checker) between(from, to int64) []Update {
	var out []Update
	for _, u := range c.updates {
		if u.RV > from && u.RV < to {
			out = append(out, u)
		}
	}
	return out
}

// around describes the updates next to r: the last two before it, the
// first after it.
func (c *checker) around(r Rollout) string {
	i, _ := slices.BinarySearchFunc(c.updates, r.RV, func(u Update, rv int64) int { return cmp.Compare(u.RV, rv) })
	after := "none"
	if i < len(c.updates) {
		after = c.update(c.updates[i])
	}
	return fmt.Sprintf("the updates before it: %s; the next after it: %s", c.list(c.updates[max(0, i-2):i]), after)
}

func (c *checker) list(us []Update) string {
	if len(us) == 0 {
		return "none"
	}
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = c.update(u)
	}
	return strings.Join(parts, ", ")
}

func (c *checker) update(u Update) string {
	return fmt.Sprintf("%s v%d at rv %d (%s)", u.Source, u.Version, u.RV, clock(u.At))
}

// rollout describes r: its resourceVersion, time and the versions it
// wrote, and the versions the API server held at its resourceVersion where
// they differ; the baseline (r.RV == Start) as such.
func (c *checker) rollout(r Rollout) string {
	if r.RV == c.h.Start {
		return fmt.Sprintf("the baseline at rv %d", r.RV)
	}
	var wrote, held []string
	for _, s := range c.h.Sources {
		v, ok := r.Wrote[s]
		wrote = append(wrote, s+" "+version(v, ok))
		cur := 0
		for _, u := range c.updates {
			if u.Source == s && u.RV < r.RV {
				cur = u.Version
			}
		}
		if !ok || v != cur {
			held = append(held, fmt.Sprintf("%s v%d", s, cur))
		}
	}
	desc := fmt.Sprintf("the rollout at rv %d (%s) that wrote %s", r.RV, clock(r.At), strings.Join(wrote, ", "))
	if len(held) > 0 {
		desc += fmt.Sprintf(" (the API server held %s)", strings.Join(held, ", "))
	}
	return desc
}

func version(v int, ok bool) string {
	if !ok || v == Unknown {
		return "v?"
	}
	return fmt.Sprintf("v%d", v)
}

// clock writes t as 15:04:05.000.
func clock(t time.Time) string { return t.Format("15:04:05.000") }

// Versions returns the last version of each source the updates wrote (0 for
// a source none wrote).
func Versions(sources []string, updates []Update) map[string]int {
	out := map[string]int{}
	for _, s := range sources {
		out[s] = 0
	}
	for _, u := range slices.SortedFunc(slices.Values(updates), func(a, b Update) int { return cmp.Compare(a.RV, b.RV) }) {
		if _, ok := out[u.Source]; ok {
			out[u.Source] = u.Version
		}
	}
	return out
}
