package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"nudge.dev/nudge/hack/bench/watch"
)

// valueAt is a Harbor's bound value and when the watch first saw it.
type valueAt struct {
	value string
	at    time.Time
}

// targetWatcher watches the scenario's Harbors and records when each took
// each value of the bound field.
type targetWatcher struct {
	mu      sync.Mutex
	seen    map[string]valueAt
	last    time.Time     // the latest change seen
	changed chan struct{} // closed and replaced on every change
}

// startTargetWatcher starts a watch of the Harbors of the scenario's
// namespace and returns once its cache has synced.
func startTargetWatcher(ctx context.Context, dyn dynamic.Interface) (*targetWatcher, error) {
	w := &targetWatcher{seen: map[string]valueAt{}, changed: make(chan struct{})}
	if err := watch.Namespace(ctx, dyn, harborGVR, bindingNamespace, func(_, obj any) { w.observe(obj) }); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *targetWatcher) observe(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	value, _, _ := unstructured.NestedString(u.Object, accessKeyPath...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[u.GetName()].value == value {
		return
	}
	w.seen[u.GetName()] = valueAt{value: value, at: now}
	w.last = now
	close(w.changed)
	w.changed = make(chan struct{})
}

// wait waits up to timeout until every Harbor of names holds value, seen
// after since; it returns when each was seen holding it, and the names that
// did not within timeout.
func (w *targetWatcher) wait(ctx context.Context, names []string, value string, since time.Time, timeout time.Duration) (map[string]time.Time, []string) {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		seen := map[string]time.Time{}
		var missing []string
		for _, n := range names {
			if v := w.seen[n]; v.value == value && !v.at.Before(since) {
				seen[n] = v.at
			} else {
				missing = append(missing, n)
			}
		}
		changed := w.changed
		w.mu.Unlock()
		if len(missing) == 0 {
			return seen, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return seen, missing
		case <-ctx.Done():
			return seen, missing
		}
	}
}

// lastSeen returns how long after since the latest change was seen.
func (w *targetWatcher) lastSeen(since time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last.Sub(since)
}
