package nudgetest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watch lists the objects of list's kind that opts select and watches them
// until t ends. The channel gives each listed object as an Added event, as
// a watch from no resource version does, then every change after the list.
//
// A plain watch ends when the API server closes it: at its timeout, or
// when the test reads too slowly for the server's watch cache, which then
// drops the watcher (more likely on a loaded machine, and silent: the
// counts of a test stop). This one resumes from the last resource version
// it saw (client-go's RetryWatcher), so it misses no change; the channel
// closes when t ends, or with an Error event when the server has compacted
// that version away.
func Watch(t testing.TB, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) <-chan watch.Event {
	t.Helper()
	ctx := t.Context()
	if err := c.List(ctx, list, opts...); err != nil {
		t.Fatalf("listing %T: %v", list, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("reading the items of %T: %v", list, err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), append(opts, &client.ListOptions{Raw: &o})...)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), lw)
	if err != nil {
		t.Fatalf("watching %T: %v", list, err)
	}
	t.Cleanup(rw.Stop)
	events := make(chan watch.Event)
	go func() {
		defer close(events)
		send := func(ev watch.Event) bool {
			select {
			case events <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, item := range items {
			if !send(watch.Event{Type: watch.Added, Object: item}) {
				return
			}
		}
		for ev := range rw.ResultChan() {
			if !send(ev) {
				return
			}
		}
	}()
	return events
}
