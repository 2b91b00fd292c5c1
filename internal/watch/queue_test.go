package watch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/watch"
)

// TestQueueHoldsLowPriorityAddsBeyondItsReadyItems: the informers' first
// lists add every workload at low priority, more than the queue keeps
// ready; those beyond wait outside it and are handed out later, each once,
// in the order added, and a change of one of them (an add at the default
// priority) goes ahead of them all, once.
func TestQueueHoldsLowPriorityAddsBeyondItsReadyItems(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	q := watch.NewQueue(t.Context(), "", logr.Discard())
	n := 3 * watch.QueueReady
	req := func(i int) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("w-%04d", i)}}
	}
	low := priorityqueue.AddOpts{Priority: new(handler.LowPriority)}
	for i := range n {
		q.AddWithOpts(low, req(i))
	}
	for i := range n {
		q.AddWithOpts(low, req(i)) // a workload's sources' own adds, as at start
	}
	g.Expect(q.Len()).To(Equal(n), "every item counted once, waiting or not")
	changed := req(n - 1)
	q.Add(changed)

	got := make(chan reconcile.Request)
	priorities := make(chan int, n)
	go func() {
		for {
			item, priority, shutdown := q.GetWithPriority()
			if shutdown {
				return
			}
			priorities <- priority
			got <- item
			q.Done(item)
		}
	}()
	defer q.ShutDown()
	next := func(what string) reconcile.Request {
		select {
		case item := <-got:
			return item
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s handed out in 30 s", what)
			return reconcile.Request{}
		}
	}
	g.Expect(next("change")).To(Equal(changed), "the change ahead of the items waiting")
	g.Expect(<-priorities).To(BeZero())
	for i := range n - 1 {
		g.Expect(next(fmt.Sprintf("item %d", i))).To(Equal(req(i)), "the items in the order added")
		g.Expect(<-priorities).To(Equal(handler.LowPriority))
	}
	g.Consistently(got).WithTimeout(300*time.Millisecond).ShouldNot(Receive(), "each item once: the change's not again")
	g.Expect(q.Len()).To(BeZero())
}
