package sources

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Times returns when src's content was seen to change, the last two times at
// most, latest first; nil when none is remembered.
func (c *Changes) Times(src refs.Source) []time.Time {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.at[src]
	switch {
	case !ok:
		return nil
	case s.prev.IsZero():
		return []time.Time{s.last}
	}
	return []time.Time{s.last, s.prev}
}

// Recorder returns a predicate that records every content change of a
// ConfigMap or Secret it is offered (creations after the initial list, and
// updates of data or binaryData) and forgets a deleted one. It passes every
// event: combine it after the predicates that filter them.
func (c *Changes) Recorder() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !e.IsInInitialList {
				c.record(e.Object)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld != nil && e.ObjectNew != nil && ContentChanged(e.ObjectOld, e.ObjectNew) {
				c.record(e.ObjectNew)
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			c.forget(e.Object)
			return true
		},
	}
}

// record notes that obj's content changed now, unless its resourceVersion
// was recorded already.
func (c *Changes) record(obj client.Object) {
	src, ok := sourceOf(obj)
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
	c.at[src] = seen{version: obj.GetResourceVersion(), last: c.now(), prev: s.last}
}

// forget drops what is remembered of obj.
func (c *Changes) forget(obj client.Object) {
	src, ok := sourceOf(obj)
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

// sourceOf returns the source obj is, when it is a ConfigMap or Secret.
func sourceOf(obj client.Object) (refs.Source, bool) {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return refs.Source{Kind: refs.ConfigMap, Namespace: obj.GetNamespace(), Name: obj.GetName()}, true
	case *corev1.Secret:
		return refs.Source{Kind: refs.Secret, Namespace: obj.GetNamespace(), Name: obj.GetName()}, true
	}
	return refs.Source{}, false
}
