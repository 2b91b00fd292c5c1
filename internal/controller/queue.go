package controller

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// controllerQueue is a controller's queue made when the controller is set
// up, not when it starts: controller-runtime's priority queue, as the
// controller would make it, which may be shut down more than once.
type controllerQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	shutDown sync.Once
}

// newQueue returns the queue of the controller named name (log is its
// logger), shut down when ctx is done or when the controller stops. The
// controller is given it by its options' NewQueue (see queueOf), so that its
// sources may add their handlers before the manager starts
// (kindSource.addHandler), and the events of the informers' first lists wait
// in it for the workers; the initial objects' at low priority, behind the
// changes.
func newQueue(ctx context.Context, name string, log logr.Logger) *controllerQueue {
	q := &controllerQueue{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.Log = log })}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	return q
}

// ShutDown shuts the queue down; it may be called again.
func (q *controllerQueue) ShutDown() { q.shutDown.Do(q.PriorityQueue.ShutDown) }

// ShutDownWithDrain is ShutDown, as the priority queue's.
func (q *controllerQueue) ShutDownWithDrain() { q.ShutDown() }

// queueOf returns a controller's NewQueue that gives it q, whatever rate
// limiter it is asked for: q has the priority queue's own, which is the one
// controller-runtime gives a controller with a priority queue.
func queueOf(q *controllerQueue) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return q
	}
}
