package watch

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// QueueReady is how many ready items a controller's queue holds before it
// keeps further low-priority adds outside it (see Queue).
const QueueReady = 500

// feedEvery bounds the wait of the queue's feeder for a Done that makes
// room (see Queue.feed).
const feedEvery = 50 * time.Millisecond

// Queue is a controller's queue made when the controller is set
// up, not when it starts: controller-runtime's priority queue, as the
// controller would make it, which may be shut down more than once.
//
// Low-priority adds (the informers' first lists: every workload, and every
// source's workloads, at start) wait outside the priority queue, in order,
// once it holds QueueReady ready items, and are passed on as it drains. The
// priority queue keeps its items in Go maps, which never shrink: fed all at
// once, they stayed sized for every workload of the cluster (3.7 MB at
// 25,000 Deployments, docs/performance.md). What waits here is a slice and
// a set, dropped whole once passed on. An add without delay at another
// priority of an item waiting here goes to the priority queue at once, and
// the item is no longer waiting. Len counts both.
type Queue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	shutDown sync.Once

	mu      sync.Mutex
	held    []reconcile.Request        // low-priority adds waiting, in order; may hold items no longer waiting
	waiting map[reconcile.Request]bool // the items waiting; nil when none
	queued  map[reconcile.Request]bool // items added at low priority and not handed out yet: at most about QueueReady
	room    chan struct{}              // a Done or a held add: the feeder looks again
}

// NewQueue returns the queue of the controller named name (log is its
// logger), shut down when ctx is done or when the controller stops. The
// controller is given it by its options' NewQueue (see QueueOf), so that its
// sources may add their handlers before the manager starts
// (KindSource.AddHandler), and the events of the informers' first lists wait
// in it for the workers; the initial objects' at low priority, behind the
// changes.
func NewQueue(ctx context.Context, name string, log logr.Logger) *Queue {
	q := &Queue{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.Log = log }),
		queued: map[reconcile.Request]bool{}, room: make(chan struct{}, 1)}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	go q.feed(ctx)
	return q
}

// AddWithOpts adds items: a low-priority add without delay of an item
// neither waiting nor queued at low priority (the priority queue would
// merge it) to the priority queue while it holds fewer than QueueReady
// ready items and none wait, else to those waiting (see Queue);
// any other add to the priority queue, an add without delay ending the
// items' wait (a delayed one leaves them waiting, to be passed on when their
// turn comes, as the priority queue would have kept them ready).
func (q *Queue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	now := o.After == 0 && !o.RateLimited
	q.mu.Lock()
	defer q.mu.Unlock()
	if !now || o.Priority == nil || *o.Priority != handler.LowPriority {
		if now {
			for _, item := range items {
				delete(q.waiting, item)
			}
		}
		q.PriorityQueue.AddWithOpts(o, items...)
		return
	}
	room := 0
	if q.waiting == nil {
		room = QueueReady - q.PriorityQueue.Len()
	}
	var direct []reconcile.Request
	for _, item := range items {
		switch {
		case q.queued[item] || q.waiting[item]:
		case len(direct) < room:
			direct = append(direct, item)
			q.queued[item] = true
		default:
			if q.waiting == nil {
				q.waiting = map[reconcile.Request]bool{}
			}
			q.waiting[item] = true
			q.held = append(q.held, item)
		}
	}
	if len(direct) > 0 {
		q.PriorityQueue.AddWithOpts(o, direct...)
	}
	if q.waiting != nil {
		q.poke()
	}
}

// GetWithPriority returns the next item and its priority, blocking until
// there is one or the queue is shut down (shutdown true).
func (q *Queue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.mu.Lock()
		delete(q.queued, item)
		q.mu.Unlock()
	}
	return item, priority, shutdown
}

// Get returns the next item, as GetWithPriority.
func (q *Queue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// Add adds item at the default priority.
func (q *Queue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter adds item once after has passed.
func (q *Queue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited adds item once the rate limiter allows.
func (q *Queue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// Done marks item processed, which may make room for those waiting.
func (q *Queue) Done(item reconcile.Request) {
	q.PriorityQueue.Done(item)
	q.poke()
}

// Len returns the number of ready items: the priority queue's and those
// waiting outside it.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.PriorityQueue.Len() + len(q.waiting)
}

// poke tells the feeder to look again.
func (q *Queue) poke() {
	select {
	case q.room <- struct{}{}:
	default:
	}
}

// feed passes the items waiting on to the priority queue, at low priority
// and in order, as it has room for them, until ctx is done or the queue is
// shut down. While none wait it sleeps until told (poke); while some do, it
// looks again at each Done, and every feedEvery at the latest.
func (q *Queue) feed(ctx context.Context) {
	timer := time.NewTimer(feedEvery)
	defer timer.Stop()
	for {
		q.mu.Lock()
		waiting := q.waiting != nil
		q.mu.Unlock()
		var tick <-chan time.Time
		if waiting {
			timer.Reset(feedEvery)
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-q.room:
		case <-tick:
		}
		if q.ShuttingDown() {
			return
		}
		q.pass()
	}
}

// pass passes on as many of the items waiting as the priority queue has room
// for (QueueReady less its ready items), in order.
func (q *Queue) pass() {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := QueueReady - q.PriorityQueue.Len()
	if n <= 0 || q.waiting == nil {
		return
	}
	var next []reconcile.Request
	for len(next) < n && len(q.held) > 0 {
		item := q.held[0]
		q.held = q.held[1:]
		if q.waiting[item] {
			delete(q.waiting, item)
			q.queued[item] = true
			next = append(next, item)
		}
	}
	if len(q.held) == 0 {
		q.held, q.waiting = nil, nil
	}
	if len(next) > 0 {
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: new(handler.LowPriority)}, next...)
	}
}

// ShutDown shuts the queue down; it may be called again.
func (q *Queue) ShutDown() { q.shutDown.Do(q.PriorityQueue.ShutDown) }

// ShutDownWithDrain is ShutDown, as the priority queue's.
func (q *Queue) ShutDownWithDrain() { q.ShutDown() }

// QueueOf returns a controller's NewQueue that gives it q, whatever rate
// limiter it is asked for: q has the priority queue's own, which is the one
// controller-runtime gives a controller with a priority queue.
func QueueOf(q *Queue) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return q
	}
}
