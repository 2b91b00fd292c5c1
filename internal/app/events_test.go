package app

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"

	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// More Events than the sink may hold, recorded through client-go's recorder
// while workloads are being written (so none may be written yet): at most
// the bound wait, each in one goroutine; the others are dropped at once and
// counted; once the writes pause, the waiting ones reach the API server.
func TestEventsBeyondTheBoundAreDroppedAndCounted(t *testing.T) {
	const maxWaiting, sent = 100, 400
	g := NewWithT(t)
	ctx := t.Context()
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	ns, err := p.GenerateNamespace(ctx, "events-")
	g.Expect(err).NotTo(HaveOccurred())

	// A workload written every 10 ms until stopWrites: no lull.
	lull := &controller.Lull{}
	writing, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			lull.Wrote(time.Now())
			select {
			case <-writing.Done():
				return
			case <-tick.C:
			}
		}
	}()

	sink, err := newYieldingSink(lull, prometheus.NewRegistry())
	g.Expect(err).NotTo(HaveOccurred())
	sink.maxDelay = 10 * time.Minute // only a lull lets an Event through
	sink.slots = make(chan struct{}, maxWaiting)
	scheme := k8sruntime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	before := runtime.NumGoroutine()
	recorder, err := eventRecorder(ctx, p.Config(), scheme, options.Default(), sink)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range sent {
		// One object each: client-go would merge Events about the same
		// object and reason into a series.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "1"}}
		recorder.Eventf(cm, nil, corev1.EventTypeNormal, controller.ReasonRolled, "Roll", "Event %d", i)
	}

	g.Eventually(func() float64 { return testutil.ToFloat64(sink.dropped) }).WithTimeout(time.Minute).
		Should(Equal(float64(sent-maxWaiting)), "every Event beyond the %d waiting is dropped and counted", maxWaiting)
	g.Expect(sink.waiting()).To(Equal(maxWaiting), "the first %d Events wait for a lull", maxWaiting)
	g.Eventually(func() int { return runtime.NumGoroutine() - before }).WithTimeout(30*time.Second).
		Should(BeNumerically("<=", maxWaiting+50), "goroutines: one per waiting Event, a few for the broadcaster and its client")

	stopWrites()
	c, err := eventsv1client.NewForConfig(p.Config())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) int {
		l, err := c.Events(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return len(l.Items)
	}).WithTimeout(time.Minute).Should(Equal(maxWaiting), "the waiting Events are written once workload writes pause, the dropped ones never")
	g.Eventually(sink.waiting).WithTimeout(30*time.Second).Should(BeZero(), "no Event waits any more")
	g.Expect(testutil.ToFloat64(sink.dropped)).To(Equal(float64(sent-maxWaiting)), "no Event dropped after the lull")
}
