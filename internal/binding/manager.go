package binding

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/trim"
)

// FieldManager is the field manager of nudge's applies.
const FieldManager = "nudge"

// Finalizer holds a binding with deletionPolicy Delete until nudge has
// removed its fields from the target.
const Finalizer = "nudge.dev/value-binding"

// Reconciler reconciles ValueBindings. Build it with its exported fields
// and register it with SetupWithManager.
type Reconciler struct {
	// Client reads sources from the manager's cache (bindings have a
	// cache of their own, see bindingCache; the writes go on a connection
	// of their own, see ownConnection).
	Client client.Client
	// APIReader reads a source's value when applying: never cached.
	APIReader client.Reader
	// Key computes the applied fingerprint.
	Key fingerprint.Key
	// Recorder records Events about bindings.
	Recorder events.EventRecorder
	// Targets are the kinds a binding may write (--value-binding-targets).
	Targets []schema.GroupKind
	// TargetCache configures the cache of targets: its namespaces and field
	// selector (the manager's); SetupWithManager fills in the rest.
	TargetCache cache.Options
	// DiscoveryInterval is how often a binding whose target kind is not
	// served looks again.
	DiscoveryInterval time.Duration
	// Workers is the number of concurrent reconciles.
	Workers int
	// Lull, when not nil, is told of every apply to a target (the rollouts'
	// Lull: Events wait for a pause in the writes, so a fan-out's applies
	// do not share the API server with its Events).
	Lull *record.Lull
	// Clock tells the time of overwrites (Conflict); the real clock if nil.
	Clock clock.PassiveClock
	// Metrics, when not nil, is where nudge_value_bindings is registered.
	Metrics prometheus.Registerer

	// writer writes applies, statuses and finalizers on a connection of
	// its own (see ownConnection).
	writer client.Client
	// targets caches the targets, bindings the ValueBindings (see
	// bindingCache).
	targets   cache.Cache
	bindings  cache.Cache
	reads     reads
	ctrl      controller.Controller
	mu        sync.Mutex
	watched   map[schema.GroupVersionKind]bool
	conflicts *overwrites
	statuses  *pending
	// statusSlots holds one token per status write in flight (at most
	// statusWriters).
	statusSlots chan struct{}
	ready       *states
}

// Index names of the field indexes on ValueBindings.
const (
	// sourceIndex keys a binding by each source it reads: "Secret/ns/name",
	// "ConfigMap/ns/name".
	sourceIndex = "nudge.dev/binding-source"
	// targetIndex keys a binding by its target: "group/Kind/ns/name".
	targetIndex = "nudge.dev/binding-target"
)

func sourceKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func targetKey(gk schema.GroupKind, namespace, name string) string {
	return gk.Group + "/" + gk.Kind + "/" + namespace + "/" + name
}

// SetupWithManager registers the indexes, the target cache and a controller
// that reconciles ValueBindings on their own changes, on changes of the
// sources they read and of their targets. It runs on the leader only.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.watched = map[schema.GroupVersionKind]bool{}
	r.conflicts = newOverwrites()
	r.statuses = newPending()
	r.statusSlots = make(chan struct{}, statusWriters)
	var err error
	if r.ready, err = registerStates(r.Metrics, mgr); err != nil {
		return fmt.Errorf("registering nudge_value_bindings: %w", err)
	}
	opts := r.TargetCache
	opts.Scheme, opts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	if opts.HTTPClient, err = ownConnection(mgr.GetConfig()); err != nil {
		return fmt.Errorf("creating the target cache's HTTP client: %w", err)
	}
	writes, err := ownConnection(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the HTTP client of the writes: %w", err)
	}
	if r.writer, err = client.New(mgr.GetConfig(), client.Options{HTTPClient: writes, Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}); err != nil {
		return fmt.Errorf("creating the client of the writes: %w", err)
	}
	opts.DefaultTransform = trim.BindingTarget
	// The reconciler never changes a target read from the cache (an apply
	// builds its own object), so reads skip the copy.
	opts.DefaultUnsafeDisableDeepCopy = ptr.To(true)
	targets, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return fmt.Errorf("creating the target cache: %w", err)
	}
	if err := mgr.Add(targets); err != nil {
		return fmt.Errorf("adding the target cache: %w", err)
	}
	r.targets = targets
	if r.bindings, err = bindingCache(ctx, mgr, r.TargetCache); err != nil {
		return err
	}
	toBindings := handler.EnqueueRequestsFromMapFunc(r.bindingsOfSource)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("valuebinding").
		WatchesRawSource(source.Kind[client.Object](r.bindings, &v1alpha1.ValueBinding{}, &handler.EnqueueRequestForObject{},
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate))).
		Watches(&corev1.Secret{}, toBindings, builder.WithPredicates(sourceChanged)).
		Watches(&corev1.ConfigMap{}, toBindings, builder.WithPredicates(sourceChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)})
	if r.Lull != nil {
		b = b.WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			go r.statuses.flush(ctx, r.Lull, q)
			return nil
		}))
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.ctrl = c
	return nil
}

// bindingCache returns a cache of ValueBindings, indexed by source and by
// target, over a connection of its own, added to mgr: the manager waits for
// its own cache's informers to sync before it starts any controller, and a
// list of a thousand bindings (a custom resource, served as JSON) held back
// every rollout of a restarted nudge by a quarter of a second
// (docs/performance.md). Only the ValueBinding controller waits for this
// one. o gives its namespaces, field selector and informers (sharding).
func bindingCache(ctx context.Context, mgr ctrl.Manager, o cache.Options) (cache.Cache, error) {
	opts := o
	opts.Scheme, opts.Mapper = mgr.GetScheme(), mgr.GetRESTMapper()
	var err error
	if opts.HTTPClient, err = ownConnection(mgr.GetConfig()); err != nil {
		return nil, fmt.Errorf("creating the binding cache's HTTP client: %w", err)
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the binding cache: %w", err)
	}
	if err := c.IndexField(ctx, &v1alpha1.ValueBinding{}, sourceIndex, bindingSources); err != nil {
		return nil, fmt.Errorf("indexing ValueBindings by source: %w", err)
	}
	if err := c.IndexField(ctx, &v1alpha1.ValueBinding{}, targetIndex, bindingTarget); err != nil {
		return nil, fmt.Errorf("indexing ValueBindings by target: %w", err)
	}
	// A cache is a runnable that needs no leader election: the manager
	// starts it with the others, and waits for no sync.
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the binding cache: %w", err)
	}
	return c, nil
}

// ownConnection returns an HTTP client for cfg with a transport, and so
// connections, of its own. client-go otherwise shares one HTTP/2 connection
// among every client of a config, and kube-apiserver closes a watch whose
// events it cannot hand on within a short budget (docs/performance.md):
// during a fan-out, the watches of the targets and of the bindings would
// queue behind the responses of 64 concurrent applies, then status writes.
// So the target watch and the reconciler's writes each get one, and the
// manager's watches (bindings, sources) keep theirs. A dial function of its
// own keeps client-go from sharing a cached transport (transport.tlsCacheKey).
func ownConnection(cfg *rest.Config) (*http.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return rest.HTTPClientFor(cfg)
}

// watchTarget starts watching the targets of kind gvk, once: their events
// enqueue the bindings that target them.
func (r *Reconciler) watchTarget(gvk schema.GroupVersionKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](r.targets, u, handler.EnqueueRequestsFromMapFunc(r.bindingsOfTarget),
		predicate.ResourceVersionChangedPredicate{}, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !r.ownApply(e.ObjectNew)
		}})
	if err := r.ctrl.Watch(src); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	r.watched[gvk] = true
	return nil
}

// bindingSources is the index func of sourceIndex.
func bindingSources(obj client.Object) []string {
	b, ok := obj.(*v1alpha1.ValueBinding)
	if !ok {
		return nil
	}
	var keys []string
	for _, v := range b.Spec.Values {
		if kind, sel := sourceOf(v); sel != nil {
			keys = append(keys, sourceKey(kind, b.Namespace, sel.Name))
		}
	}
	return keys
}

// bindingTarget is the index func of targetIndex.
func bindingTarget(obj client.Object) []string {
	b, ok := obj.(*v1alpha1.ValueBinding)
	if !ok {
		return nil
	}
	gv, err := schema.ParseGroupVersion(b.Spec.Target.APIVersion)
	if err != nil {
		return nil
	}
	return []string{targetKey(gv.WithKind(b.Spec.Target.Kind).GroupKind(), b.Namespace, b.Spec.Target.Name)}
}

// sourceOf returns the kind ("Secret" or "ConfigMap") and selector of v's
// source; nil when it has none (refused at admission).
func sourceOf(v v1alpha1.BoundValue) (string, *v1alpha1.KeySelector) {
	switch {
	case v.ValueFrom.SecretKeyRef != nil:
		return "Secret", v.ValueFrom.SecretKeyRef
	case v.ValueFrom.ConfigMapKeyRef != nil:
		return "ConfigMap", v.ValueFrom.ConfigMapKeyRef
	}
	return "", nil
}

// bindingsOfSource maps a Secret or ConfigMap to the bindings that read it,
// from the cache's index.
func (r *Reconciler) bindingsOfSource(ctx context.Context, obj client.Object) []reconcile.Request {
	kind := "ConfigMap"
	if _, ok := obj.(*corev1.Secret); ok {
		kind = "Secret"
	}
	return r.lookup(ctx, sourceIndex, sourceKey(kind, obj.GetNamespace(), obj.GetName()))
}

// bindingsOfTarget maps a target to the bindings that write it.
func (r *Reconciler) bindingsOfTarget(ctx context.Context, obj client.Object) []reconcile.Request {
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	return r.lookup(ctx, targetIndex, targetKey(gk, obj.GetNamespace(), obj.GetName()))
}

// ownApply reports whether the update of target obj needs no reconcile:
// it is nudge's own apply for the one binding that writes it, which changed
// nothing the binding does not know (its reconcile would find its values
// held, and take a worker from the fan-out's other applies), or it came
// while that binding's apply was in flight, which then checks it (see
// overwrites.own). The status an apply made due is written by
// pending.flush. A target of several bindings is always reconciled: one
// binding's apply removes the fields only another's wrote, and the other
// must see it.
func (r *Reconciler) ownApply(obj client.Object) bool {
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	reqs := r.lookup(context.Background(), targetIndex, targetKey(gk, obj.GetNamespace(), obj.GetName()))
	return len(reqs) == 1 && r.conflicts.own(reqs[0].String(), obj.GetResourceVersion())
}

func (r *Reconciler) lookup(ctx context.Context, index, key string) []reconcile.Request {
	var list v1alpha1.ValueBindingList
	if err := r.bindings.List(ctx, &list, client.MatchingFields{index: key}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to look ValueBindings up in the index", "index", index, "key", key)
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i, b := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)}
	}
	return reqs
}
