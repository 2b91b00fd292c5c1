package watch

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// NewInformerFunc is cache.Options.NewInformer's type: it makes the shared
// informer of one kind from its ListerWatcher, an object of the kind, the
// resync period and the indexers.
type NewInformerFunc func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// SyncWaits makes a cache whose WaitForCacheSync waits for its informers'
// first lists on their sync channels (client-go's HasSyncedChecker) rather
// than by polling every 100 ms, as controller-runtime's does (client-go's
// WaitForCacheSync). The manager starts the controllers once its cache has
// synced, so after every start the first reconcile waited for that poll
// (docs/performance.md, under steady load). Set NewInformer's result as the
// cache's NewInformer and NewCache's as the manager's NewCache; the zero
// value is ready to use.
type SyncWaits struct {
	mu        sync.Mutex
	informers []toolscache.SharedIndexInformer
}

// NewInformer returns next, each informer it makes kept to be waited for.
// Set it as the cache's NewInformer (cache.Options).
func (w *SyncWaits) NewInformer(next NewInformerFunc) NewInformerFunc {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := next(lw, obj, resync, indexers)
		w.mu.Lock()
		w.informers = append(w.informers, inf)
		w.mu.Unlock()
		return inf
	}
}

// NewCache returns next, its caches' WaitForCacheSync waiting first for the
// informers NewInformer made.
func (w *SyncWaits) NewCache(next cache.NewCacheFunc) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := next(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &syncWaitingCache{Cache: c, waits: w}, nil
	}
}

// syncWaitingCache is a cache whose WaitForCacheSync waits without polling.
type syncWaitingCache struct {
	cache.Cache
	waits *SyncWaits
}

// WaitForCacheSync waits for each informer made so far and not stopped to
// have synced, or ctx to be done, then returns the cache's own
// WaitForCacheSync: its first look finds them synced, and it is still the
// one to decide (an informer made by another NewInformer, if any, is polled
// for as before). It returns false when ctx is done first. nudge removes
// no informer: one stopped while waited for would hold the wait until ctx
// is done.
func (c *syncWaitingCache) WaitForCacheSync(ctx context.Context) bool {
	c.waits.mu.Lock()
	informers := append([]toolscache.SharedIndexInformer(nil), c.waits.informers...)
	c.waits.mu.Unlock()
	for _, inf := range informers {
		if inf.IsStopped() {
			continue
		}
		select {
		case <-inf.HasSyncedChecker().Done():
		case <-ctx.Done():
			return false
		}
	}
	return c.Cache.WaitForCacheSync(ctx)
}
