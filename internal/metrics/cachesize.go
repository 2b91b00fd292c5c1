package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// cacheObjects serves nudge_cache_objects{resource}: the number of objects
// in nudge's informer caches, by resource ("configmaps", "secrets",
// "deployments.apps", "rollouts.argoproj.io", ...), summed over the nudges
// running in the process (one, but for tests). Each informer is counted by
// an event handler of its own (+1 on add, -1 on delete), so a scrape reads
// counters and copies no list. The ValueBinding targets' cache is not
// counted.
type cacheObjects struct {
	desc *prometheus.Desc
	sets running[*CountedInformers]
}

// CountedInformers are the informers of one nudge's cache, each with the
// count of its objects that nudge_cache_objects serves. Make them with
// RegisterCacheObjects.
type CountedInformers struct {
	scheme *runtime.Scheme
	mu     sync.Mutex
	counts []*informerCount
}

type informerCount struct {
	resource string
	informer toolscache.SharedIndexInformer
	n        atomic.Int64
}

// RegisterCacheObjects registers nudge_cache_objects with reg (or reuses the
// collector registered there before) and returns the informers of one
// nudge's cache, whose kinds scheme knows: set their NewInformer as the
// cache's (cache.Options), and they are counted until ctx, the life of that
// nudge, is done. It returns any registration error.
func RegisterCacheObjects(ctx context.Context, reg prometheus.Registerer, scheme *runtime.Scheme) (*CountedInformers, error) {
	c, err := Register(reg, &cacheObjects{
		desc: prometheus.NewDesc("nudge_cache_objects",
			"Objects in nudge's informer caches, by resource (plural.group).", []string{"resource"}, nil),
	})
	if err != nil {
		return nil, err
	}
	s := &CountedInformers{scheme: scheme}
	c.sets.add(ctx, s)
	return s, nil
}

// NewInformer creates a shared informer as controller-runtime does by
// default, with an event handler counting its objects.
func (s *CountedInformers) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	count := &informerCount{resource: resourceOf(obj, s.scheme), informer: inf}
	// Only fails on a stopped informer; this one has not started.
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { count.n.Add(1) },
		DeleteFunc: func(any) { count.n.Add(-1) },
	})
	s.mu.Lock()
	s.counts = append(s.counts, count)
	s.mu.Unlock()
	return inf
}

// resourceOf returns the resource of obj's kind, "plural.group" ("plural"
// in the core group), "unknown" when the scheme does not know it.
func resourceOf(obj runtime.Object, scheme *runtime.Scheme) string {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return "unknown"
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource().String()
}

// Describe implements prometheus.Collector.
func (c *cacheObjects) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one gauge per resource some
// running informer caches.
func (c *cacheObjects) Collect(ch chan<- prometheus.Metric) {
	byResource := map[string]int64{}
	c.sets.each(func(s *CountedInformers) {
		s.mu.Lock()
		for _, count := range s.counts {
			if !count.informer.IsStopped() {
				byResource[count.resource] += count.n.Load()
			}
		}
		s.mu.Unlock()
	})
	for resource, n := range byResource {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), resource)
	}
}
