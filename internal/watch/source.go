package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// KindSource is a controller's source of obj's events from the manager's
// cache: controller-runtime's source.Kind, with two differences.
//
// Its handler can be added before the manager starts (AddHandler), its
// events going to the controller's queue made ahead (NewQueue): the
// informer's first list then feeds the handler as it arrives. The Kind
// source adds its handler when the controller starts, once every cache has
// synced, and the handler is then handed the cached objects one by one (4,000
// sources in the benchmark) before the workers may start.
//
// Its WaitForSync returns as soon as its handler has been given the cached
// objects, told by the handler registration's sync channel (client-go's
// HasSyncedChecker); the Kind source polls for it every 100 ms. As with the
// Kind source, WaitForSync returns only once the cache has synced too:
// nothing rolls before its inputs are cached.
type KindSource struct {
	cache      cache.Cache
	obj        client.Object
	handler    handler.EventHandler
	predicates []predicate.Predicate

	// Set by AddHandler: the queue the handler adds to and its
	// registration. Without, Start adds the handler.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	reg   toolscache.ResourceEventHandlerRegistration

	synced chan struct{} // closed when the start has ended, err set
	err    error         // the start's outcome
	cancel context.CancelFunc
}

var _ source.SyncingSource = (*KindSource)(nil)

// NewKindSource returns the source of obj's events (a typed object, or
// unstructured or metadata with its kind set) from c, given to h when every
// predicate passes.
func NewKindSource(c cache.Cache, obj client.Object, h handler.EventHandler, predicates ...predicate.Predicate) *KindSource {
	return &KindSource{cache: c, obj: obj, handler: h, predicates: predicates}
}

// AddHandler adds the source's handler to the informer of its kind now,
// its events going to queue, which must be the queue the controller will
// start with (see NewQueue). It does not wait for the informer: called
// before the manager starts, the handler is given the informer's first list
// as it arrives, the initial objects as creates in the initial list (which
// controller-runtime's handlers queue at low priority). It returns an error
// when the cache cannot give the informer now (a kind not served): Start
// then asks for it again, as without.
func (s *KindSource) AddHandler(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	inf, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the informer of %s: %w", s, err)
	}
	reg, err := s.register(ctx, inf, queue)
	if err != nil {
		return err
	}
	s.queue, s.reg = queue, reg
	return nil
}

// register adds the source's handler to inf, its events going to queue, and
// returns the registration.
func (s *KindSource) register(ctx context.Context, inf cache.Informer, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) (toolscache.ResourceEventHandlerRegistration, error) {
	registered := &registering{Informer: inf}
	// source.Informer adds controller-runtime's own event handler, the one
	// the Kind source adds, and registering keeps its registration.
	if err := (&source.Informer{Informer: registered, Handler: s.handler, Predicates: s.predicates}).Start(ctx, queue); err != nil {
		return nil, err
	}
	return registered.reg, nil
}

// Start adds the source's handler to the informer of its kind, unless
// AddHandler did, without blocking: the informer is asked for, and waited
// for, in the background (WaitForSync reports the outcome). With the handler
// added already, queue must be the one it adds to.
func (s *KindSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	if s.queue != nil && s.queue != queue {
		return fmt.Errorf("%s: started with another queue than its handler adds to", s)
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.synced = make(chan struct{})
	go func() {
		s.err = s.start(ctx, queue)
		close(s.synced)
	}()
	return nil
}

// start gets the informer and adds the handler, unless AddHandler did, and
// waits for the handler to be synced. Like the Kind source, it asks for the
// informer again every 10 s while the cache cannot give it (a custom
// resource's definition not served yet, RBAC), logging why, until ctx is
// done.
func (s *KindSource) start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	reg := s.reg
	if reg == nil {
		var inf cache.Informer
		var lastErr error
		if err := wait.PollUntilContextCancel(ctx, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			if inf, lastErr = s.cache.GetInformer(ctx, s.obj); lastErr != nil {
				ctrl.LoggerFrom(ctx).Error(lastErr, "Could not get an informer; trying again", "source", s.String())
				return false, nil
			}
			return true, nil
		}); err != nil {
			return fmt.Errorf("getting the informer of %s: %w", s, errors.Join(err, lastErr))
		}
		var err error
		if reg, err = s.register(ctx, inf, queue); err != nil {
			return err
		}
	}
	// Synced already when the manager started the controller; waits only
	// for an informer the controller was the first to ask for.
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("%s: cache not synced", s)
	}
	select {
	case <-reg.HasSyncedChecker().Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: handler not synced: %w", s, ctx.Err())
	}
}

// WaitForSync waits for the handler to have been given every cached object,
// the cache being synced. It returns nil when ctx is cancelled (the
// controller stops) and an error when it expires (the controller's cache
// sync timeout) or the informer could not be had. It must follow Start.
func (s *KindSource) WaitForSync(ctx context.Context) error {
	if s.synced == nil {
		return fmt.Errorf("%s: waited for before it was started", s)
	}
	select {
	case <-s.synced:
		return s.err
	case <-ctx.Done():
		s.cancel()
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil
		}
		return fmt.Errorf("timed out waiting for %s to sync", s)
	}
}

// String names the source in the controller's logs.
func (s *KindSource) String() string {
	if gvk := s.obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return fmt.Sprintf("kind source: %T[%s]", s.obj, gvk)
	}
	return fmt.Sprintf("kind source: %T", s.obj)
}

// registering is an informer that keeps the registration of the handler
// added to it (one).
type registering struct {
	cache.Informer
	reg toolscache.ResourceEventHandlerRegistration
}

func (r *registering) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := r.Informer.AddEventHandlerWithOptions(h, opts)
	r.reg = reg
	return reg, err
}

// ReconcileLog returns the log constructor controller-runtime's builder
// gives a controller of obj's kind made with For: the controller's name,
// group and kind, and the request's object. The controllers here watch their
// kind with a KindSource instead of For, and keep the same log lines.
func ReconcileLog(mgr ctrl.Manager, name string, obj client.Object) (func(*reconcile.Request) logr.Logger, error) {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	log := mgr.GetLogger().WithValues("controller", name, "controllerGroup", gvk.Group, "controllerKind", gvk.Kind)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return log
		}
		return log.WithValues(gvk.Kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}, nil
}
