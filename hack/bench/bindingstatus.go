package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"nudge.dev/nudge/hack/bench/watch"
)

// statusAt is a ValueBinding's status as the scenario reads it: its applied
// fingerprint, whether Ready is True for its generation, and when the watch
// saw that.
type statusAt struct {
	fingerprint string
	ready       bool
	at          time.Time
}

// statusWatcher watches the scenario's ValueBindings and records each one's
// latest status. nudge writes a binding's status after its target (in a
// fan-out, after the other targets), so statuses are timed apart.
type statusWatcher struct {
	mu      sync.Mutex
	seen    map[string]statusAt
	changed chan struct{} // closed and replaced on every change
}

// startStatusWatcher starts a watch of the ValueBindings of the scenario's
// namespace and returns once its cache has synced.
func startStatusWatcher(ctx context.Context, dyn dynamic.Interface) (*statusWatcher, error) {
	w := &statusWatcher{seen: map[string]statusAt{}, changed: make(chan struct{})}
	if err := watch.Namespace(ctx, dyn, bindingGVR, bindingNamespace, func(_, obj any) { w.observe(obj) }); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *statusWatcher) observe(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	fp, _, _ := unstructured.NestedString(u.Object, "status", "appliedFingerprint")
	s := statusAt{fingerprint: fp, ready: ready(u), at: now}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.seen[u.GetName()]; old.fingerprint == s.fingerprint && old.ready == s.ready {
		return
	}
	w.seen[u.GetName()] = s
	close(w.changed)
	w.changed = make(chan struct{})
}

// ready reports whether vb's Ready condition is True for its generation.
func ready(vb *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(vb.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		return m["status"] == "True" && gen == vb.GetGeneration()
	}
	return false
}

// fingerprints returns each binding's applied fingerprint, by name.
func (w *statusWatcher) fingerprints() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.seen))
	for n, s := range w.seen {
		out[n] = s.fingerprint
	}
	return out
}

// recorded waits until each of names is Ready with an applied fingerprint
// other than before[name] (absent: any), and returns how long after since
// the last of them was seen; an error after timeout.
func (w *statusWatcher) recorded(ctx context.Context, names []string, before map[string]string, since time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		left := 0
		var last time.Time
		for _, n := range names {
			s := w.seen[n]
			if !s.ready || s.fingerprint == "" || s.fingerprint == before[n] {
				left++
			} else if s.at.After(last) {
				last = s.at
			}
		}
		changed := w.changed
		w.mu.Unlock()
		if left == 0 {
			return last.Sub(since), nil
		}
		select {
		case <-changed:
		case <-deadline:
			return 0, fmt.Errorf("%d of %d ValueBindings did not record their new status within %v", left, len(names), timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// eventsQuiet waits until the controller has written no Event for quiet
// (from the audit log), counted from the call at the earliest, or timeout: the Events of the setup (one per
// binding, written at the controller's own pace after its applies) would
// otherwise share the API server with the changes the next phase times. It
// returns how long it waited.
func (b *bench) eventsQuiet(ctx context.Context, quiet, timeout time.Duration) (time.Duration, error) {
	begin := time.Now()
	for {
		if err := b.audit.Read(); err != nil {
			return 0, err
		}
		// From begin at the earliest: nudge holds an Event back until its
		// writes pause (1 s), so right after a phase none may have been
		// sent yet.
		last := begin
		for _, r := range b.audit.Between(begin, time.Now().Add(time.Minute)) {
			if r.What == "events" && (r.Verb == "create" || r.Verb == "patch") && r.At.After(last) {
				last = r.At
			}
		}
		if time.Since(last) >= quiet || time.Since(begin) >= timeout {
			return time.Since(begin), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
