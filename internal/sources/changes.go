package sources

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/refs"
)

// Changes remembers, per ConfigMap and Secret, when nudge's informers saw
// its content change: the last two times, so that rollout.Decide can tell a
// lone change from one of a burst (rule 1). It is kept in memory only: after
// a restart nothing is remembered and every change is lone. Memory is
// bounded by the sources that exist: a source's entry is dropped with it.
//
// Every workload kind's controller watches the same sources, so the same
// event is offered once per kind; an event is recorded once, by the
// resourceVersion it brings. A nil *Changes records nothing and remembers
// nothing. It is safe for concurrent use.
type Changes struct {
	// Now tells the time; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex
	at map[refs.Source]seen
}

// seen is what Changes keeps of one source.
type seen struct {
	version    string    // resourceVersion of the last change recorded
	last, prev time.Time // when the last and the one before were seen
}

// Times returns when src's content was seen to change, the last two times
// at most, latest first. version is the resourceVersion of src as the
// reader of its content sees it (the cache): when the recorder has not seen
// that version yet (the cache is updated before its event reaches the
// recorder), its change counts as seen at now. nil when nothing is known of
// src: no event since the start but the initial list, which brings no
// change (nor its version: a source nudge never saw change is lone).
func (c *Changes) Times(src refs.Source, version string, now time.Time) []time.Time {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.at[src]
	switch {
	case !ok:
		return nil
	case s.version == version:
		return nonZero(s.last, s.prev)
	}
	return nonZero(now, s.last)
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

// Recorder returns a predicate that records every content change of a
// ConfigMap or Secret it is offered (creations after the initial list, and
// updates of data or binaryData), notes the resourceVersion of every other
// update, and forgets a deleted source. It passes every event: put it
// before the predicates that filter them, so that it sees every version.
func (c *Changes) Recorder() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !e.IsInInitialList {
				c.record(e.Object, true)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld != nil && e.ObjectNew != nil {
				c.record(e.ObjectNew, ContentChanged(e.ObjectOld, e.ObjectNew))
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			c.forget(e.Object)
			return true
		},
	}
}

// record notes obj's resourceVersion and, when changed, that its content
// changed now; a version already noted is not recorded again.
func (c *Changes) record(obj client.Object, changed bool) {
	src, ok := SourceOf(obj)
	if c == nil || !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.at[src]
	if s.version == obj.GetResourceVersion() {
		return
	}
	if c.at == nil {
		c.at = map[refs.Source]seen{}
	}
	s.version = obj.GetResourceVersion()
	if changed {
		s.last, s.prev = c.now(), s.last
	}
	c.at[src] = s
}

// forget drops what is remembered of obj.
func (c *Changes) forget(obj client.Object) {
	src, ok := SourceOf(obj)
	if c == nil || !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at, src)
}

func (c *Changes) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}
