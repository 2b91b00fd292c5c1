package sources

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// Changes remembers, per ConfigMap and Secret whose content nudge's
// informers saw change in the last Young, what rollout.Decide needs of
// that change:
//
//   - when: the last two times, to tell a lone change from one of a burst
//     (Times, rule 1 in docs/design.md);
//   - at which resourceVersion each key of its content (data and
//     binaryData, see ContentChanged) last changed, a key added or removed
//     being a key changed, and at which the source was last created and
//     deleted, to tell a change made after a workload's creation (After,
//     rule 3);
//   - its labels, and when they last changed and from what, to tell when
//     the set a label selector matches changed (Selected).
//
// A creation after the informer's initial list is a change in time; a
// deletion forgets the times, and keeps the content the source had (Gone), so that
// its re-creation counts as an update of the keys whose content differs.
// Memory is one entry per source changed, created, deleted or relabelled
// in the last Young, one resourceVersion per key changed; it is kept in memory only:
// after a restart nothing is remembered and every change is lone.
//
// Every workload kind's controller watches the same sources, so the same
// event is offered once per kind: it is recorded once, by the first
// recorder that is offered its resourceVersion; an older version is one
// recorded already. A nil *Changes records nothing and remembers nothing.
// It is safe for concurrent use.
type Changes struct {
	// Clock tells the time of a change; clock.RealClock when nil.
	Clock clock.PassiveClock

	mu sync.Mutex
	of Recent[refs.Source, change]
}

// change is what Changes keeps of one source.
type change struct {
	version    string            // resourceVersion of the last event recorded
	last, prev time.Time         // when the last content change and the one before were seen
	keys       map[string]string // per key changed, the resourceVersion it last changed at
	// created and deleted are the resourceVersions of the source's last
	// creation after the initial list and its last deletion, "" for none;
	// moved is when the later of them was seen.
	created, deleted string
	moved            time.Time
	// gone is the content the source had when it was deleted, nil while
	// it exists.
	gone fingerprint.Digests
	// labels are the source's labels in the last version recorded (see
	// Labels); was are those before its last change of labels, seen at
	// relabeled: what a label selector's set is told by (see Selected).
	labels, was labels.Labels
	relabeled   time.Time
}

// Old reports whether the last content change, creation, deletion or
// change of labels was seen more than Young before now.
func (c change) Old(now time.Time) bool {
	return now.Sub(c.last) > Young && now.Sub(c.moved) > Young && now.Sub(c.relabeled) > Young
}

// existed reports whether the source existed at resourceVersion version,
// as far as its last creation and deletion tell: known is false when
// neither came after version (then it existed as it does now). Of a
// deletion and a re-creation both after version, the source existed at
// version when the deletion came first.
func (c change) existed(version string) (existed, known bool) {
	created, deleted := after(c.created, version), after(c.deleted, version)
	switch {
	case created && deleted:
		return newer(c.created, c.deleted), true
	case created:
		return false, true
	case deleted:
		return true, true
	}
	return false, false
}

// exists reports whether the source exists, as far as its last creation
// and deletion tell.
func (c change) exists() bool {
	return c.deleted == "" || c.created != "" && newer(c.created, c.deleted)
}

// after reports whether resourceVersion v is set and greater than version;
// a version that cannot be compared is not.
func after(v, version string) bool {
	if v == "" {
		return false
	}
	n, err := resourceversion.CompareResourceVersion(v, version)
	return err == nil && n > 0
}

// Times returns when src's content was seen to change, the last two times
// at most, latest first. version is the resourceVersion of src as the
// reader of its content sees it (the cache): when the recorder has not seen
// that version yet (the cache is updated before its event reaches the
// recorder), its change counts as seen at now. nil when no change of src
// was seen in the last Young: none since the start (the initial list
// brings no change), or one too old for rule 1 to count it.
func (c *Changes) Times(src refs.Source, version string, now time.Time) []time.Time {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.of.Get(src, now)
	switch {
	case !ok:
		return nil
	case e.version == version:
		return nonZero(e.last, e.prev)
	}
	return nonZero(now, e.last)
}

func nonZero(ts ...time.Time) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.IsZero() {
			out = append(out, t)
		}
	}
	return out
}

// After reports whether nudge saw, in the Young before now, a change of
// what ref reads of its source after resourceVersion version (a
// workload's, taken at its creation): an update of a key ref reads (any key
// for a whole reference), a re-creation with other content in such a key,
// or a deletion of a source that existed at version. A creation of a source
// that did not exist at version counts only when absenceCounts: when the
// workload's applied state records the source's absence (an optional
// reference, Reloader's --reload-on-create or --reload-on-delete), so that
// its appearance changes what the pods would run with; a required source
// created after the workload is what its pods start with.
//
// Resource versions are compared as integers
// (resourceversion.CompareResourceVersion, promised since Kubernetes 1.35
// for objects of one resource): across resources, as here, the comparison
// holds when both are stored in one etcd, the default, whose revision is
// every object's resourceVersion, a deletion's included (a watch delivers a
// deleted object at the revision of its deletion). A malformed version
// answers false.
func (c *Changes) After(ref refs.Reference, version string, absenceCounts bool, now time.Time) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.of.Get(ref.Source, now)
	if !ok {
		return false
	}
	if existed, known := e.existed(version); known {
		switch exists := e.exists(); {
		case !existed && exists:
			return absenceCounts
		case !existed:
			return false
		case !exists:
			return true
		}
	}
	for k, v := range e.keys {
		if !ref.Whole() && !slices.Contains(ref.Keys, k) {
			continue
		}
		if after(v, version) {
			return true
		}
	}
	return false
}

// Gone returns the content src had when it was deleted, when it existed at
// resourceVersion version (a workload's creation), was deleted since, in
// the Young before now, and does not exist again: what the pods of a
// workload created before the deletion started with. ok is false
// otherwise.
func (c *Changes) Gone(src refs.Source, version string, now time.Time) (fingerprint.Digests, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.of.Get(src, now)
	if !ok || e.exists() || e.gone == nil {
		return nil, false
	}
	if existed, known := e.existed(version); !known || !existed {
		return nil, false
	}
	return e.gone, true
}

// Deleted returns the resourceVersion of src's last deletion when nudge saw
// it in the Young before now and src does not exist again: the version of
// its absence, as a cached resourceVersion is of a source's content.
func (c *Changes) Deleted(src refs.Source, now time.Time) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.of.Get(src, now)
	if !ok || e.exists() {
		return "", false
	}
	return e.deleted, true
}

// Selected returns when nudge saw, in the Young before now, a change of
// the set of sources of kind in namespace that sel matches: a content
// change or creation of a source whose labels sel matches, the deletion of
// one, and a change of labels that took a source into or out of the set,
// or kept it there. The times are what rollout.Input.Changes wants of the
// set's one reference (refs.ConfigMapSelector, refs.SecretSelector), in
// no order, possibly repeated. It reads every source remembered (those
// changed in the last Young), under the lock.
func (c *Changes) Selected(kind refs.Kind, namespace string, sel labels.Selector, now time.Time) []time.Time {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for src, e := range c.of.All(now) {
		if src.Kind != kind || src.Namespace != namespace {
			continue
		}
		if !(e.labels != nil && sel.Matches(e.labels)) && !(e.was != nil && sel.Matches(e.was)) {
			continue
		}
		out = append(out, nonZero(e.last, e.prev, e.relabeled)...)
		if !e.exists() {
			out = append(out, e.moved)
		}
	}
	return out
}

// Recorder returns a predicate that records every content change of a
// ConfigMap or Secret it is offered (creations after the initial list, and
// updates of data or binaryData) and of its labels, notes the
// resourceVersion of every other update of a source it remembers, and
// records deletions. It passes
// every event: put it before the predicates that filter them, so that it
// sees every version, and records a change before any reconcile it causes.
func (c *Changes) Recorder() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !e.IsInInitialList && e.Object != nil {
				c.record(nil, e.Object)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld != nil && e.ObjectNew != nil {
				c.record(e.ObjectOld, e.ObjectNew)
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			if e.Object != nil {
				c.deleted(e.Object)
			}
			return true
		},
	}
}

// note calls apply, under the lock, with the entry of obj's source (ok
// false when none is remembered), obj's resourceVersion and the time now,
// and keeps the entry when apply says so; it calls nothing for an object
// that is no source, or for a version not newer than the one noted (an
// event recorded already, offered again by another kind's recorder).
func (c *Changes) note(obj client.Object, apply func(e *change, ok bool, version string, now time.Time) bool) {
	src, ok := SourceOf(obj)
	if c == nil || !ok {
		return
	}
	version := obj.GetResourceVersion()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	e, ok := c.of.Get(src, now)
	if ok && !newer(version, e.version) {
		return
	}
	if apply(&e, ok, version, now) {
		c.of.Put(src, e, now)
	}
}

// record notes the version of obj that follows old (nil for a creation):
// when its content changed, that it changed now, and at which version each
// key did; a creation, that it was created, and, of a source remembered as
// deleted, the keys whose content differs from what it had then; when its
// labels changed, that they did now, and what they were.
func (c *Changes) record(old, obj client.Object) {
	c.note(obj, func(e *change, remembered bool, version string, now time.Time) bool {
		e.labels = Labels(obj)
		if old != nil && !SameLabels(old, obj) {
			e.was, e.relabeled, remembered = Labels(old), now, true
		}
		var keys []string
		switch {
		case old != nil && ContentChanged(old, obj):
			keys = changedKeys(Digests(old), Digests(obj))
		case old == nil && e.gone != nil:
			keys = changedKeys(e.gone, Digests(obj))
		}
		if old != nil && len(keys) == 0 {
			e.version = version // the version of a source changed lately, for Times
			return remembered
		}
		if len(keys) > 0 && e.keys == nil {
			e.keys = make(map[string]string, len(keys))
		}
		for _, k := range keys {
			e.keys[k] = version
		}
		if old == nil {
			e.created, e.moved, e.gone = version, now, nil
		}
		e.version, e.last, e.prev = version, now, e.last
		return true
	})
}

// deleted notes obj's deletion, at its resourceVersion (the deletion's, as
// a watch delivers it), with the content it had.
func (c *Changes) deleted(obj client.Object) {
	c.note(obj, func(e *change, _ bool, version string, now time.Time) bool {
		// Its times go: a source created again starts with a lone change.
		e.version, e.last, e.prev = version, time.Time{}, time.Time{}
		e.labels = Labels(obj)
		e.deleted, e.moved, e.gone = version, now, Digests(obj)
		if e.gone == nil {
			e.gone = fingerprint.Digests{}
		}
		return true
	})
}

// newer reports whether resourceVersion a comes after b; when either is
// not an integer, whether they differ.
func newer(a, b string) bool {
	n, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return a != b
	}
	return n > 0
}

// changedKeys returns the keys whose digest differs between old and new,
// or that only one of them has.
func changedKeys(old, new fingerprint.Digests) []string {
	var out []string
	for k, v := range new {
		if w, ok := old[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

func (c *Changes) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}
