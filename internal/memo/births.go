package memo

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// Births remembers, per workload whose creation nudge's informer delivered
// (not one listed at start), the workload's resourceVersion then, for
// sources.Young or until nudge rolls it. A source whose content nudge saw
// change to a later resourceVersion (sources.Changes.After) changed after
// the workload's pods were made, so the workload rolls once even on first
// sight (rule 3 in docs/design.md; rollout.Input.Young). A workload created
// while the watch was down is delivered by a later list at a later
// resourceVersion: fewer sources count, never more. The zero value is
// ready to use; it is safe for concurrent use.
type Births struct {
	mu sync.Mutex
	of sources.Recent[types.NamespacedName, birth]
}

// birth is one workload's creation as nudge saw it.
type birth struct {
	version string
	at      time.Time
	// held lists the young sources of a rollout that waits (window, slot,
	// missing source, halt): kept past sources.Young, until the rollout.
	held []refs.Source
	// entered lists the young sources a baseline recorded as they entered
	// the references or were read another way (rollout.Decision.Entered):
	// the applied state holds their change, so they are young no more.
	entered []refs.Source
	// baseline is the applied state this nudge wrote last by a baseline,
	// "" if none: only an applied state of its own can have been read
	// from a cache behind the workload's creation (see Settled).
	baseline string
	// stated says that an update was seen writing an applied state, this
	// nudge's or another replica's (one that led while this one stood
	// by): a first sight after it is of a state wiped, not of the
	// creation (see Gone).
	stated bool
}

// Old reports whether the creation was seen more than sources.Young before
// now and holds no young source.
func (e birth) Old(now time.Time) bool {
	return now.Sub(e.at) > sources.Young && len(e.held) == 0
}

// Recorder returns a predicate that records the creation of a workload
// delivered by a watch, and what its updates write of nudge's state (see
// wrote), and lets every event through. Placed before the predicates that
// enqueue the workload, it records the creation before the workload's first
// reconcile. A standby replica's handlers are fed too, so a replica that
// comes to lead knows what the leader before it wrote.
func (b *Births) Recorder(now func() time.Time) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !e.IsInInitialList && e.Object != nil {
				b.born(client.ObjectKeyFromObject(e.Object), e.Object.GetResourceVersion(), now())
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld != nil && e.ObjectNew != nil {
				b.wrote(client.ObjectKeyFromObject(e.ObjectNew), e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), now())
			}
			return true
		},
	}
}

// wrote notes what an update of workload key, from annotations before to
// after, wrote of nudge's state: a rollout (workload.LastRolloutAnnotation)
// ends the workload's youth, as Decided does for this nudge's own; an
// applied state (workload.AppliedAnnotation) makes a later first sight one
// of a state wiped (see Gone).
func (b *Births) wrote(key types.NamespacedName, before, after map[string]string, now time.Time) {
	rolled := after[workload.LastRolloutAnnotation] != before[workload.LastRolloutAnnotation]
	stated := after[workload.AppliedAnnotation] != "" && after[workload.AppliedAnnotation] != before[workload.AppliedAnnotation]
	if !rolled && !stated {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.of.Get(key, now)
	switch {
	case !ok:
	case rolled:
		b.of.Delete(key)
	case !e.stated:
		e.stated = true
		b.of.Put(key, e, now)
	}
}

func (b *Births) born(key types.NamespacedName, version string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.of.Put(key, birth{version: version, at: now}, now)
}

// Read is one reference of a workload, as Young needs it.
type Read struct {
	refs.Reference
	// AbsenceCounts is true when the workload's applied state records the
	// source's absence (see sources.Changes.After): its creation then
	// changes what the pods run with.
	AbsenceCounts bool
}

// Young returns, sorted, the sources of reads (the references whose
// source was read: found, absent or missing) of which nudge saw what the
// reference reads change after key's creation, while key is young or
// holds such a change: an update, a deletion, a re-creation with other
// content, or a creation of a source whose absence counts (see
// sources.Changes.After). A creation or deletion just after the workload's
// rolls it as an update does, whether nudge's first sight of the workload
// came before it or after.
func (b *Births) Young(key types.NamespacedName, reads []Read, changes *sources.Changes, now time.Time) []refs.Source {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.of.Get(key, now)
	if !ok {
		return nil
	}
	var out []refs.Source
	for _, r := range reads {
		if slices.Contains(out, r.Source) {
			continue
		}
		if slices.Contains(e.held, r.Source) ||
			!slices.Contains(e.entered, r.Source) && changes.After(r.Reference, e.version, r.AbsenceCounts, now) {
			out = append(out, r.Source)
		}
	}
	slices.SortFunc(out, refs.Source.Compare)
	return out
}

// Gone returns, of missing (the required and kept references whose source
// was not found), the entry, under key k, of each source that existed at
// workload key's creation and was deleted since, while key is young (see
// sources.Changes.Gone): what its pods started with, which a first sight
// records as a baseline made before the deletion would have kept it
// (rollout.Input.Gone). Only until a baseline of key was written, by this
// nudge or seen written by another replica: a first sight after that (its
// state wiped by a GitOps replace, say, whose new pods wait for the
// source) is not of the pods made at the creation.
func (b *Births) Gone(key types.NamespacedName, k fingerprint.Key, missing []refs.Reference, changes *sources.Changes, now time.Time) map[refs.Source]fingerprint.Entry {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.of.Get(key, now)
	if !ok || e.baseline != "" || e.stated {
		return nil
	}
	var out map[refs.Source]fingerprint.Entry
	for _, ref := range missing {
		if d, ok := changes.Gone(ref.Source, e.version, now); ok {
			if out == nil {
				out = map[refs.Source]fingerprint.Entry{}
			}
			out[ref.Source] = k.Entry(ref, d)
		}
	}
	return out
}

// Settled returns, sorted, the sources of versions (each source's
// resourceVersion as the cache holds it) whose content was written at or
// before key's creation, while key is young and its applied state is the
// baseline this nudge wrote: every pod of key started with that content,
// so a baseline that read an older version from a cache the write had not
// reached yet recorded the wrong content, not a change
// (rollout.Input.Settled). An applied state another wrote (a rollout, or
// a baseline of a nudge whose cache is ahead of this one's) is not this
// nudge's to correct: it may hold newer content than this cache. A
// version that cannot be compared is not settled.
func (b *Births) Settled(key types.NamespacedName, applied string, versions map[refs.Source]string, now time.Time) []refs.Source {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.of.Get(key, now)
	if !ok || e.baseline == "" || e.baseline != applied {
		return nil
	}
	var out []refs.Source
	for src, v := range versions {
		if n, err := resourceversion.CompareResourceVersion(v, e.version); err == nil && n <= 0 {
			out = append(out, src)
		}
	}
	slices.SortFunc(out, refs.Source.Compare)
	return out
}

// Decided settles key after decision d, taken at now with young sources:
// a rollout written ends the workload's youth; one that waits (a burst, a
// missing source, a slot, a halt, a maintenance window, the storm brake, a
// producer not ready) keeps its young sources until it is written; a
// baseline written ends the youth of the sources it records as they enter
// (rollout.Decision.Entered), and is remembered (see Settled); any other
// decision lets it age.
func (b *Births) Decided(key types.NamespacedName, young []refs.Source, d rollout.Decision, written bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.of.Get(key, now)
	if !ok {
		return
	}
	switch {
	case d.Action == rollout.Roll:
		if written {
			b.of.Delete(key)
		}
	case d.Action.Waits():
		if len(young) > 0 {
			e.held = young
			b.of.Put(key, e, now)
		}
	default:
		e.held = nil
		if written {
			e.entered = append(e.entered, d.Entered...)
		}
		if written && d.Action == rollout.Baseline {
			e.baseline = d.Write.Format(key.Namespace)
		}
		b.of.Put(key, e, now)
	}
}

// Forget drops what is known of key (deleted, or not opted in: opting in
// later is first sight as rule 3 says, whatever changed meanwhile).
func (b *Births) Forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.of.Delete(key)
}
