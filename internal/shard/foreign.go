package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// syncTimeout bounds the wait for a narrow watch's first list.
const syncTimeout = time.Minute

// NewCache returns a cache.NewCacheFunc for the manager of a nudge that owns
// s: the cache opts describes (its informers limited to s by opts'
// NewInformer), plus narrow watches for the ConfigMaps and Secrets of other
// shards' namespaces that s's workloads name (nudge.dev/configmaps:
// "shared/app"). A Get of such a source starts, on first use, a watch of
// that one object (its namespace, field selector metadata.name), without a
// shard selector; a List of such sources in a namespace s does not own
// starts a watch of that kind in that namespace alone. Either is kept for
// the life of the cache, its events delivered to every handler of the
// kind's informer, so that a change of the source rolls the workloads that
// name it once, by their own shard. newInformer makes the narrow watches'
// informers (not limited to s). The whole Shard returns cache.New.
func NewCache(s Shard, newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		inner, err := cache.New(cfg, opts)
		if err != nil || s.Whole() {
			return inner, err
		}
		narrowOpts := opts
		narrowOpts.DefaultNamespaces, narrowOpts.DefaultFieldSelector, narrowOpts.DefaultLabelSelector = nil, nil, nil
		narrowOpts.NewInformer = newInformer
		narrowOpts.ByObject = map[client.Object]cache.ByObject{}
		for obj, by := range opts.ByObject {
			by.Namespaces, by.Field, by.Label = nil, nil, nil
			narrowOpts.ByObject[obj] = by
		}
		return &foreignCache{Cache: inner, shard: s, cfg: cfg, opts: narrowOpts, narrow: map[narrowKey]*narrowWatch{}, handlers: map[schema.GroupVersionKind][]handler{}}, nil
	}
}

// foreignCache is a cache whose ConfigMaps and Secrets of namespaces the
// shard does not own come from narrow watches.
type foreignCache struct {
	cache.Cache
	shard Shard
	cfg   *rest.Config
	opts  cache.Options // the narrow caches': no namespaces, no selectors

	mu       sync.Mutex
	ctx      context.Context // Start's; nil before
	narrow   map[narrowKey]*narrowWatch
	handlers map[schema.GroupVersionKind][]handler
}

// narrowKey is one narrow watch: a kind in a namespace, of one name or
// ("") every name.
type narrowKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

type narrowWatch struct {
	synced chan struct{} // closed once cache is synced or failed
	cache  cache.Cache
	err    error
}

// handler is an event handler added to a ConfigMap or Secret informer.
type handler struct {
	h    toolscache.ResourceEventHandler
	opts toolscache.HandlerOptions
}

// foreign reports whether obj (a ConfigMap or Secret, typed, unstructured
// or metadata, or a list of them) in namespace comes from a narrow watch,
// with its kind (not the list's).
func (c *foreignCache) foreign(obj runtime.Object, namespace string) (schema.GroupVersionKind, bool) {
	if namespace == "" || c.shard.Owns(namespace) {
		return schema.GroupVersionKind{}, false
	}
	gvk, err := apiutil.GVKForObject(obj, c.opts.Scheme)
	if err != nil {
		return gvk, false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret")
}

// Start runs the cache and, from then on, the narrow watches, until ctx is
// done.
func (c *foreignCache) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	return c.Cache.Start(ctx)
}

// Get reads key from the shard's cache or, for a source of another shard's
// namespace, from the narrow watch of that one object.
func (c *foreignCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, ok := c.foreign(obj, key.Namespace)
	if !ok {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	n, err := c.watch(ctx, narrowKey{gvk: gvk, namespace: key.Namespace, name: key.Name})
	if err != nil {
		return err
	}
	return n.Get(ctx, key, obj, opts...)
}

// List lists from the shard's cache or, for sources in another shard's
// namespace, from the narrow watch of that kind in that namespace.
func (c *foreignCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	gvk, ok := c.foreign(list, lo.Namespace)
	if !ok {
		return c.Cache.List(ctx, list, opts...)
	}
	n, err := c.watch(ctx, narrowKey{gvk: gvk, namespace: lo.Namespace})
	if err != nil {
		return err
	}
	return n.List(ctx, list, opts...)
}

// watch returns the synced cache of the narrow watch k, starting it first
// if needed, with every handler added so far to the kind's informer.
func (c *foreignCache) watch(ctx context.Context, k narrowKey) (cache.Cache, error) {
	c.mu.Lock()
	n, ok := c.narrow[k]
	if !ok {
		if c.ctx == nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("reading %s %s/%s of another shard: %w", k.gvk.Kind, k.namespace, k.name, &cache.ErrCacheNotStarted{})
		}
		n = &narrowWatch{synced: make(chan struct{})}
		c.narrow[k] = n
		go c.start(c.ctx, k, n, c.handlers[k.gvk])
	}
	c.mu.Unlock()
	select {
	case <-n.synced:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.cache, n.err
}

// start starts the narrow watch k with handlers, closing n.synced once it
// is synced or has failed.
func (c *foreignCache) start(ctx context.Context, k narrowKey, n *narrowWatch, handlers []handler) {
	defer close(n.synced)
	opts := c.opts
	cfg := cache.Config{}
	if k.name != "" {
		cfg.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.name)
	}
	opts.DefaultNamespaces = map[string]cache.Config{k.namespace: cfg}
	nc, err := cache.New(c.cfg, opts)
	if err != nil {
		n.err = fmt.Errorf("watching %s %s/%s of another shard: %w", k.gvk.Kind, k.namespace, k.name, err)
		return
	}
	inf, err := nc.GetInformerForKind(ctx, k.gvk)
	if err == nil {
		for _, h := range handlers {
			if _, err = inf.AddEventHandlerWithOptions(h.h, h.opts); err != nil {
				break
			}
		}
	}
	if err != nil {
		n.err = fmt.Errorf("watching %s %s/%s of another shard: %w", k.gvk.Kind, k.namespace, k.name, err)
		return
	}
	go func() { _ = nc.Start(ctx) }()
	synced, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !nc.WaitForCacheSync(synced) {
		n.err = fmt.Errorf("watching %s %s/%s of another shard: not synced within %s", k.gvk.Kind, k.namespace, k.name, syncTimeout)
		c.mu.Lock()
		delete(c.narrow, k) // the next read tries again
		c.mu.Unlock()
		return
	}
	n.cache = nc
}

// GetInformer returns the kind's informer; for ConfigMaps and Secrets one
// whose handlers also receive the narrow watches' events.
func (c *foreignCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, c.opts.Scheme)
	if err != nil {
		return inf, nil
	}
	return c.merged(gvk, inf), nil
}

// GetInformerForKind is GetInformer by kind.
func (c *foreignCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return c.merged(gvk, inf), nil
}

func (c *foreignCache) merged(gvk schema.GroupVersionKind, inf cache.Informer) cache.Informer {
	if gvk.Group != "" || (gvk.Kind != "ConfigMap" && gvk.Kind != "Secret") {
		return inf
	}
	return &mergedInformer{Informer: inf, cache: c, gvk: gvk}
}

// mergedInformer is the shard's informer of a source kind: a handler added
// to it is added to every narrow watch of the kind too, now and later. A
// handler removed is removed from the shard's informer alone (nudge
// removes none).
type mergedInformer struct {
	cache.Informer
	cache *foreignCache
	gvk   schema.GroupVersionKind
}

func (m *mergedInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (m *mergedInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (m *mergedInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := m.Informer.AddEventHandlerWithOptions(h, opts)
	if err != nil {
		return reg, err
	}
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers[m.gvk] = append(c.handlers[m.gvk], handler{h: h, opts: opts})
	ctx := c.ctx
	for k, n := range c.narrow {
		if k.gvk != m.gvk {
			continue
		}
		// A narrow watch started before h was added: add it there once
		// the watch is synced.
		go func() {
			<-n.synced
			if n.cache == nil {
				return
			}
			if inf, err := n.cache.GetInformerForKind(ctx, k.gvk); err == nil {
				_, _ = inf.AddEventHandlerWithOptions(h, opts)
			}
		}()
	}
	return reg, nil
}
