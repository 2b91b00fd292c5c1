package watch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/watch"
)

// TestKindSourceSyncs: the controllers' source of a kind reports itself
// synced only once its handler has been given every cached object (the
// controller's workers start then: nothing rolls before its inputs are
// cached), on a cache started before the source as in a restart; it
// reports an error when the cache cannot give its informer within the
// controller's timeout, and nothing when the controller stops first.
func TestKindSourceSyncs(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	const n = 300
	_, c := configMapsCache(t, "source-", n)
	_, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue(), "the cache synced")

	var given atomic.Int64
	counting := handler.Funcs{CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		given.Add(1)
	}}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	src := watch.NewKindSource(c, &corev1.ConfigMap{}, counting)
	g.Expect(src.Start(ctx, queue)).To(Succeed())
	synced, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g.Expect(src.WaitForSync(synced)).To(Succeed(), "the source synced")
	g.Expect(given.Load()).To(BeEquivalentTo(n), "every cached ConfigMap was given to the handler before the source reported itself synced")

	unserved := &unstructured.Unstructured{}
	unserved.SetGroupVersionKind(schema.GroupVersionKind{Group: "absent.nudge.dev", Version: "v1", Kind: "Absent"})
	src = watch.NewKindSource(c, unserved, counting)
	g.Expect(src.Start(ctx, queue)).To(Succeed())
	expiring, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	g.Expect(src.WaitForSync(expiring)).To(MatchError(ContainSubstring("timed out waiting for kind source")),
		"a kind the API server does not serve: the wait ends with an error at the controller's timeout")

	src = watch.NewKindSource(c, unserved, counting)
	g.Expect(src.Start(ctx, queue)).To(Succeed())
	stopped, stop := context.WithCancel(ctx)
	stop()
	g.Expect(src.WaitForSync(stopped)).To(Succeed(), "the controller stopped: no error")
}

// TestKindSourceBeforeTheCacheStarts: a source whose handler is added
// before the cache starts, as nudge's controllers add theirs, is given the
// informer's first list while the controller's workers do not run yet:
// every listed object waits in the controller's queue, at low priority, and
// a change made then goes ahead of them. The source reports itself synced
// only once started with that queue, and refuses another.
func TestKindSourceBeforeTheCacheStarts(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := t.Context()
	const n = 300
	ns, c := configMapsCache(t, "early-", n)
	queue := watch.NewQueue(ctx, "early", logr.Discard())
	enqueue := &handler.EnqueueRequestForObject{}
	updated := make(chan struct{}, 1)
	noting := handler.Funcs{CreateFunc: enqueue.Create, UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		enqueue.Update(ctx, e, q)
		select {
		case updated <- struct{}{}:
		default:
		}
	}}
	src := watch.NewKindSource(c, &corev1.ConfigMap{}, noting)
	g.Expect(src.AddHandler(ctx, queue)).To(Succeed(), "the handler was added before the cache started")
	unstarted, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	g.Expect(src.WaitForSync(unstarted)).To(MatchError(ContainSubstring("before it was started")),
		"a source waited for before its start says so instead of blocking")

	go func() { _ = c.Start(ctx) }()
	g.Eventually(queue.Len).WithTimeout(30*time.Second).Should(Equal(n),
		"every listed ConfigMap queued before the source started")
	changed := nt.ConfigMap(ns, "cm-123", map[string]string{"k": "changed"})
	g.Expect(suite.K8s.Update(ctx, changed)).To(Succeed())
	select {
	case <-updated:
	case <-time.After(30 * time.Second):
		t.Fatal("the update of cm-123 did not reach the handler in 30 s")
	}
	req, priority, _ := queue.GetWithPriority()
	g.Expect(req.Name).To(Equal("cm-123"), "the changed ConfigMap went ahead of the %d listed ones", n-1)
	g.Expect(priority).To(BeZero(), "a change is queued at the default priority")
	queue.Done(req)
	req, priority, _ = queue.GetWithPriority()
	g.Expect(priority).To(Equal(handler.LowPriority), "a listed ConfigMap (%s) is queued at low priority", req.Name)
	queue.Done(req)

	other := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer other.ShutDown()
	g.Expect(src.Start(ctx, other)).To(MatchError(ContainSubstring("another queue")), "a start with another queue than the handler's is refused")
	g.Expect(src.Start(ctx, queue)).To(Succeed())
	synced, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g.Expect(src.WaitForSync(synced)).To(Succeed(), "the source synced")
}

// configMapsCache creates a namespace named from prefix with n ConfigMaps
// cm-0 … cm-<n-1>, and returns it and a cache of it, not started.
func configMapsCache(t *testing.T, prefix string, n int) (string, cache.Cache) {
	t.Helper()
	g := NewWithT(t)
	ns, err := suite.Plane.GenerateNamespace(t.Context(), prefix)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range n {
		g.Expect(suite.K8s.Create(t.Context(), nt.ConfigMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{"k": "v"}))).To(Succeed())
	}
	c, err := cache.New(suite.Plane.Config(), cache.Options{Scheme: scheme.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(HaveOccurred())
	return ns, c
}
