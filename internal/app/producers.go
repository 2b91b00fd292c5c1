package app

import (
	"context"
	"slices"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"nudge.dev/nudge/internal/apidiscovery"
	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/refs"
)

// producerGate is the producer-ready gate (--producer-ready-timeout):
// producer.Gate, and the reconcilers it requeues when a Secret's producer
// changes.
type producerGate struct {
	gate *producer.Gate

	mu  sync.Mutex
	all []*controller.Reconciler
}

// newProducerGate returns the gate, over a cache of its own in the
// namespaces, field selector and shard of nudge's own cache; nil with
// --producer-ready-timeout=0. It returns the cache's error.
func newProducerGate(mgr ctrl.Manager, opts options.Options) (*producerGate, error) {
	if opts.ProducerReadyTimeout <= 0 {
		return nil, nil
	}
	own := cacheOptions(opts, nil)
	co := cache.Options{DefaultNamespaces: own.DefaultNamespaces, DefaultFieldSelector: own.DefaultFieldSelector,
		NewInformer: sharded(shardOf(opts), mgr.GetScheme(), toolscache.NewSharedIndexInformer)}
	p := &producerGate{}
	gate, err := producer.New(mgr, co, p.requeue)
	if err != nil {
		return nil, err
	}
	p.gate = gate
	return p, nil
}

// add has the gate requeue r's workloads; r is set up.
func (p *producerGate) add(r *controller.Reconciler) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = append(p.all, r)
}

// requeue reconciles again every workload that uses src, whose producer
// changed: it may have turned ready.
func (p *producerGate) requeue(src refs.Source) {
	p.mu.Lock()
	all := slices.Clone(p.all)
	p.mu.Unlock()
	for _, r := range all {
		r.Requeue(src)
	}
}

// watch starts the gate's watches, each once its kind is served.
func (p *producerGate) watch(ctx context.Context, kinds *apidiscovery.Kinds) error {
	if p == nil {
		return nil
	}
	return p.gate.Watch(ctx, kinds)
}
