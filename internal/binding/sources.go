package binding

import (
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/sources"
)

// sourceChanged passes creates, deletes, and the updates of a Secret or
// ConfigMap that change its content (its cached digests): a change of its
// labels or annotations binds nothing new. Sources listed at start bring no
// news: every binding is reconciled from its own initial event.
var sourceChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc: func(e event.UpdateEvent) bool { return sources.ContentChanged(e.ObjectOld, e.ObjectNew) },
}

// deletionPredicate passes the update that marks a binding for deletion.
var deletionPredicate = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// overwrites remembers, per binding and field path, when another manager
// overwrote a bound field since the binding or a source last changed; per
// binding the resourceVersion its target had when nudge last applied to
// it, so a reconcile on a cache that has not seen that write yet waits
// instead of taking nudge's own write for missing (and another manager's);
// and what lets the watch event of nudge's own apply reconcile nothing:
// the resourceVersion the apply gave the target, and the events that came
// while it was in flight (see own).
type overwrites struct {
	mu        sync.Mutex
	byBinding map[string]map[string][]time.Time
	before    map[string]written
	after     map[string]string
	// inFlight holds, per binding whose apply is in flight, the
	// resourceVersions of the target updates that came meanwhile.
	inFlight map[string][]string
}

func newOverwrites() *overwrites {
	return &overwrites{byBinding: map[string]map[string][]time.Time{}, before: map[string]written{},
		after: map[string]string{}, inFlight: map[string][]string{}}
}

// written is the resourceVersion a target had before nudge's apply, and when
// the apply was.
type written struct {
	rv string
	at time.Time
}

// staleFor bounds how long a cache that has not seen nudge's write is waited
// for: a watch delivers it in milliseconds.
const staleFor = 5 * time.Second

// wrote records that binding's target had resourceVersion rv before nudge
// applied to it at now.
func (o *overwrites) wrote(binding, rv string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.before[binding] = written{rv: rv, at: now}
}

// applying records that an apply for binding is in flight: until
// applied, every update of its target is taken for nudge's own (own) and
// kept for applied to check.
func (o *overwrites) applying(binding string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inFlight[binding] = []string{}
}

// applied ends the apply for binding that applying began: rv is the
// target's resourceVersion after it, "" if it failed. It reports whether
// an update of the target came meanwhile that was not that apply's (another
// writer's, before or after it): the binding must then be reconciled
// again. Otherwise the apply's own event, when it has not come yet, is
// expected (own).
func (o *overwrites) applied(binding, rv string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := o.inFlight[binding]
	delete(o.inFlight, binding)
	if rv != "" && !slices.Contains(seen, rv) {
		o.after[binding] = rv
	}
	return slices.ContainsFunc(seen, func(v string) bool { return v != rv })
}

// own reports whether the update of binding's target to resourceVersion rv
// needs no reconcile: it is the one nudge's last apply for binding made
// (forgotten once seen: its event comes once), or it came while an apply
// for binding was in flight (kept for applied to check).
func (o *overwrites) own(binding, rv string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if seen, ok := o.inFlight[binding]; ok {
		o.inFlight[binding] = append(seen, rv)
		return true
	}
	if o.after[binding] != rv {
		return false
	}
	delete(o.after, binding)
	return true
}

// stale reports whether rv, the target's resourceVersion in the cache, is the
// one it had before nudge's last apply (within staleFor of it): the cache has
// not seen the write.
func (o *overwrites) stale(binding, rv string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.before[binding]
	if ok && w.rv == rv && now.Sub(w.at) < staleFor {
		return true
	}
	delete(o.before, binding)
	return false
}

// get returns a copy of the times recorded for binding, within ConflictWindow
// before now.
func (o *overwrites) get(binding string, now time.Time) map[string][]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]time.Time{}
	for path, ts := range o.byBinding[binding] {
		for _, t := range ts {
			if now.Sub(t) < ConflictWindow {
				out[path] = append(out[path], t)
			}
		}
	}
	return out
}

// add records an overwrite of each path at now.
func (o *overwrites) add(binding string, paths []string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.byBinding[binding]
	if m == nil {
		m = map[string][]time.Time{}
		o.byBinding[binding] = m
	}
	for _, p := range paths {
		kept := m[p][:0]
		for _, t := range m[p] {
			if now.Sub(t) < ConflictWindow {
				kept = append(kept, t)
			}
		}
		m[p] = append(kept, now)
	}
}

// reset forgets binding's overwrites.
func (o *overwrites) reset(binding string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byBinding, binding)
}

// forget drops everything remembered of binding (deleted).
func (o *overwrites) forget(binding string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byBinding, binding)
	delete(o.before, binding)
	delete(o.before, binding+"#status")
	delete(o.after, binding)
}
