package shard

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// ListerWatcher returns lw limited to s: each list and watch carries s's
// selector (Apply), and what comes back is filtered again on the client
// (Owns), so an informer over it holds only s's namespaces whether or not
// the API server honours the selector. BOOKMARK and ERROR events pass
// unfiltered. The whole Shard returns lw as it is. lw must list and watch
// a namespaced resource: a cluster-scoped object has no namespace to hash.
func (s Shard) ListerWatcher(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	if s.Whole() {
		return lw
	}
	return &listerWatcher{shard: s, inner: toolscache.ToListerWatcherWithContext(lw), unsupported: lw}
}

type listerWatcher struct {
	shard Shard
	inner toolscache.ListerWatcherWithContext
	// unsupported is the wrapped ListerWatcher, asked whether it
	// supports the streaming watch-list (client-go's WatchListClient).
	unsupported any
}

var _ toolscache.ListerWatcherWithContext = (*listerWatcher)(nil)

func (l *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists with s's selector and drops the items of other
// shards' namespaces.
func (l *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.shard.Apply(&opts)
	list, err := l.inner.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list, l.shard.FilterList(list)
}

// WatchWithContext watches with s's selector and drops the events of other
// shards' namespaces.
func (l *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.shard.Apply(&opts)
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, l.shard.Passes), nil
}

// IsWatchListSemanticsUnSupported keeps the wrapped ListerWatcher's answer
// (client-go's util/watchlist): the wrapper changes no semantics.
func (l *listerWatcher) IsWatchListSemanticsUnSupported() bool {
	u, ok := l.unsupported.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

// Passes reports whether a watch event is for s: BOOKMARK and ERROR
// events always (they carry no object of a namespace: a resource version,
// the end of the initial events, a Status), the others when s owns their
// object's namespace. It has watch.FilterFunc's shape.
func (s Shard) Passes(e watch.Event) (watch.Event, bool) {
	if e.Type == watch.Bookmark || e.Type == watch.Error {
		return e, true
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		return e, true // not an object of a namespace: let the informer judge
	}
	return e, s.Owns(m.GetNamespace())
}

// FilterList drops from list the items of namespaces s does not own. It
// returns an error when list is not a list.
func (s Shard) FilterList(list runtime.Object) error {
	if s.Whole() {
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("filtering a list by shard: %w", err)
	}
	kept := items[:0]
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil || s.Owns(m.GetNamespace()) {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}
