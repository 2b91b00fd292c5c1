package watch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FanOut returns next, its caches' ConfigMap and Secret informers each
// carrying one client-go event handler that hands every event on to the
// handlers added to it (see fannedInformer).
//
// client-go gives each handler of an informer a buffer of its own, a ring
// of the notifications not yet handled, which grows to hold as many as the
// handler fell behind by and never shrinks: a handler added once the
// informer has synced is given every cached object at once, and one added
// before is fed the first list faster than it handles it. Every workload
// kind's controller and the ValueBinding controller add one to each source
// informer: at 100,000 sources, five rings of up to 65,536 notifications
// each per informer, about 9 MiB of heap for the life of the process
// (docs/performance.md). One handler, added before the informers start,
// keeps one ring per informer.
//
// A handler added to a fanned informer is not given the objects cached
// before it was added: every handler nudge adds to a source informer drops
// them (sources.Changed, the ValueBinding controller's sourceChanged; each
// workload is reconciled from its own initial event).
func FanOut(next cache.NewCacheFunc) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := next(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &fanOutCache{Cache: c, fanned: map[string]*fannedInformer{}}, nil
	}
}

// fanOutCache is a cache whose source informers are fanned out.
type fanOutCache struct {
	cache.Cache

	mu     sync.Mutex
	fanned map[string]*fannedInformer // by kind
}

// GetInformer returns the informer of obj's kind; fanned out for a typed
// ConfigMap or Secret.
func (c *fanOutCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	switch obj.(type) {
	case *corev1.ConfigMap:
		return c.fan("ConfigMap", inf)
	case *corev1.Secret:
		return c.fan("Secret", inf)
	}
	return inf, nil
}

// GetInformerForKind is GetInformer by kind.
func (c *fanOutCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil || gvk.GroupVersion() != corev1.SchemeGroupVersion || (gvk.Kind != "ConfigMap" && gvk.Kind != "Secret") {
		return inf, err
	}
	return c.fan(gvk.Kind, inf)
}

// fan returns the fanned informer of the core kind, adding its one handler
// to inf the first time.
func (c *fanOutCache) fan(kind string, inf cache.Informer) (cache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.fanned[kind]; ok {
		return f, nil
	}
	f := &fannedInformer{Informer: inf}
	f.handlers.Store(&[]*fannedHandler{})
	reg, err := inf.AddEventHandler(f.events())
	if err != nil {
		return nil, err
	}
	f.reg = reg
	c.fanned[kind] = f
	return f, nil
}

// fannedInformer is an informer whose one client-go handler hands each
// event to the handlers added to it, one after the other in the order they
// were added: each handler receives the events in the order the informer
// delivers them, as from client-go.
//
// Unlike client-go, it does not give a handler added after the informer
// started the objects cached already (client-go's synthetic adds, with
// isInInitialList set): it receives the events handed on after it was
// added, including the initial list's when added before the informer
// synced. Its registration has synced once the one handler has. A
// handler's resync period is not honoured: every handler gets the
// informer's resyncs. Removing a handler stops its events.
type fannedInformer struct {
	cache.Informer // the kind's informer; its handler methods are the fan-out's

	reg      toolscache.ResourceEventHandlerRegistration // the one handler's
	mu       sync.Mutex                                  // serialises changes of handlers
	handlers atomic.Pointer[[]*fannedHandler]            // read by each event
}

// fannedHandler is a handler added to a fannedInformer and its registration.
type fannedHandler struct {
	h   toolscache.ResourceEventHandler
	reg toolscache.ResourceEventHandlerRegistration
}

// HasSynced reports whether the fan-out's handler has synced.
func (h *fannedHandler) HasSynced() bool { return h.reg.HasSynced() }

// HasSyncedChecker is that of the fan-out's handler.
func (h *fannedHandler) HasSyncedChecker() toolscache.DoneChecker { return h.reg.HasSyncedChecker() }

var errNotFanned = errors.New("not a handler of this informer")

// events returns the handler that hands each event on.
func (f *fannedInformer) events() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			for _, h := range *f.handlers.Load() {
				h.h.OnAdd(obj, isInInitialList)
			}
		},
		UpdateFunc: func(old, obj any) {
			for _, h := range *f.handlers.Load() {
				h.h.OnUpdate(old, obj)
			}
		},
		DeleteFunc: func(obj any) {
			for _, h := range *f.handlers.Load() {
				h.h.OnDelete(obj)
			}
		},
	}
}

// AddEventHandler adds h: it receives the events handed on from now.
func (f *fannedInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	added := &fannedHandler{h: h, reg: f.reg}
	hs := append(slices.Clone(*f.handlers.Load()), added)
	f.handlers.Store(&hs)
	return added, nil
}

// AddEventHandlerWithResyncPeriod is AddEventHandler: the resync period is
// the informer's.
func (f *fannedInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandler(h)
}

// AddEventHandlerWithOptions is AddEventHandler: the options (a logger, a
// resync period) are the informer's.
func (f *fannedInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandler(h)
}

// RemoveEventHandler removes a handler added to f; it is idempotent. It
// returns an error for a registration f did not give.
func (f *fannedInformer) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	r, ok := reg.(*fannedHandler)
	if !ok {
		return errNotFanned
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	hs := slices.DeleteFunc(slices.Clone(*f.handlers.Load()), func(h *fannedHandler) bool { return h == r })
	f.handlers.Store(&hs)
	return nil
}
