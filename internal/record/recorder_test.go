package record

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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// The recorder on a real API server, one namespace per subtest.
func TestRecorder(t *testing.T) {
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	scheme := k8sruntime.NewScheme()
	NewWithT(t).Expect(corev1.AddToScheme(scheme)).To(Succeed())
	c, err := eventsv1client.NewForConfig(p.Config())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	namespace := func(t *testing.T) string {
		ns, err := p.GenerateNamespace(t.Context(), "events-")
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		return ns
	}
	list := func(g Gomega, ns string) []eventsv1.Event {
		l, err := c.Events(ns).List(context.Background(), metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return l.Items
	}

	// More Events than may wait, recorded while a workload is written every
	// 10 ms (so none may be written yet): the bound wait, in no goroutine of
	// their own; the others are dropped at once and counted; once the
	// writes pause, the waiting ones reach the API server.
	t.Run("Events beyond the bound are dropped and counted", func(t *testing.T) {
		const maxWaiting, sent = 100, 400
		g := NewWithT(t)
		ctx := t.Context()
		ns := namespace(t)

		lull := &Lull{}
		stopWrites := writeEvery(ctx, lull, 10*time.Millisecond)
		defer stopWrites()

		before := runtime.NumGoroutine()
		r, err := newRecorder(ctx, p.Config(), scheme, options.Default(), lull, prometheus.NewRegistry())
		g.Expect(err).NotTo(HaveOccurred())
		r.maxDelay = 10 * time.Minute // only a lull lets an Event through,
		r.quiet = 2 * time.Second     // and a stall of the writes above shorter than this does not make one
		r.slots = make(chan struct{}, maxWaiting)
		r.Start(ctx)
		for i := range sent {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
				UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "1"}}
			r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Event %d", i)
		}

		g.Expect(testutil.ToFloat64(r.dropped)).To(Equal(float64(sent-maxWaiting)),
			"every Event beyond the %d waiting is dropped and counted, at once", maxWaiting)
		g.Expect(r.waiting()).To(Equal(maxWaiting), "the first %d Events wait for a lull", maxWaiting)
		g.Expect(runtime.NumGoroutine()-before).To(BeNumerically("<=", eventsWriters+10),
			"goroutines: the writers and the client's, none per waiting Event")

		stopWrites()
		g.Eventually(func(g Gomega) int { return len(list(g, ns)) }).WithTimeout(time.Minute).
			Should(Equal(maxWaiting), "the waiting Events are written once workload writes pause, the dropped ones never")
		g.Eventually(r.waiting).WithTimeout(30*time.Second).Should(BeZero(), "no Event waits any more")
		g.Expect(testutil.ToFloat64(r.dropped)).To(Equal(float64(sent-maxWaiting)), "no Event dropped after the lull")
	})

	// Rollouts one after another, each change waiting for the rollout
	// before it, are now and then more than 0.1 s apart on a busy machine:
	// such a stall is no pause, and the Event waits until the writes stop
	// for eventsQuiet (or eventsMaxDelay).
	t.Run("an Event waits while workloads are written less than eventsQuiet apart", func(t *testing.T) {
		const every = 300 * time.Millisecond // three times the quiet that let Events through before
		g := NewWithT(t)
		ctx := t.Context()
		ns := namespace(t)
		lull := &Lull{}
		stopWrites := writeEvery(ctx, lull, every)
		defer stopWrites()
		r, err := newRecorder(ctx, p.Config(), scheme, options.Default(), lull, prometheus.NewRegistry())
		g.Expect(err).NotTo(HaveOccurred())
		r.Start(ctx)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", UID: "uid-app", ResourceVersion: "1"}}
		r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Rolled ConfigMap app")
		g.Consistently(func(g Gomega) []eventsv1.Event { return list(g, ns) }).WithTimeout(eventsMaxDelay-2*time.Second).
			Should(BeEmpty(), "no Event written while workloads are written every %v", every)
		stopWrites()
		stopped := time.Now()
		g.Eventually(func(g Gomega) []eventsv1.Event { return list(g, ns) }).WithTimeout(10*time.Second).
			Should(HaveLen(1), "the Event written once the writes stopped")
		g.Expect(time.Since(stopped)).To(BeNumerically(">=", eventsQuiet-every),
			"the Event written no sooner than eventsQuiet after the last write")
	})

	// nudge stopping (a rolling update of it) while its last rollouts'
	// Events wait for a lull: Flush writes them, and those recorded after
	// the stop (reconciles finishing), without the lull.
	t.Run("Events waiting when nudge stops are written by Flush", func(t *testing.T) {
		const before, after = 5, 2
		g := NewWithT(t)
		ns := namespace(t)
		lull := &Lull{}
		stopWrites := writeEvery(t.Context(), lull, 10*time.Millisecond)
		defer stopWrites()
		ctx, stop := context.WithCancel(t.Context())
		r, err := newRecorder(ctx, p.Config(), scheme, options.Default(), lull, prometheus.NewRegistry())
		g.Expect(err).NotTo(HaveOccurred())
		r.maxDelay = 10 * time.Minute // only a lull, which the writes above never leave, lets an Event through
		r.Start(ctx)
		record := func(i int) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
				UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "1"}}
			r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Event %d", i)
		}
		for i := range before {
			record(i)
		}
		g.Eventually(r.waiting).WithTimeout(10*time.Second).Should(Equal(before), "the Events wait for a lull")
		stop()
		for i := range after {
			record(before + i)
		}
		written, left := r.Flush(30 * time.Second)
		g.Expect(written).To(Equal(before+after), "Events written by Flush")
		g.Expect(left).To(BeZero(), "Events Flush could not write")
		g.Expect(list(g, ns)).To(HaveLen(before+after), "every Event recorded, before the stop and after, is in the API server")
		g.Expect(r.waiting()).To(BeZero(), "no Event waits any more")
	})

	// client-go's broadcaster would make the second and third Event a
	// series of the first (same object reference, type, reason and action)
	// and lose their notes; nudge records each rollout's sources.
	t.Run("Events about one object are written each with its note", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		ns := namespace(t)
		r, err := newRecorder(ctx, p.Config(), scheme, options.Default(), &Lull{}, prometheus.NewRegistry())
		g.Expect(err).NotTo(HaveOccurred())
		r.Start(ctx)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", UID: "uid-app", ResourceVersion: "7"}}
		notes := []string{"Rolled ConfigMap app because a changed", "Rolled ConfigMap app because b changed", "Rolled ConfigMap app because a changed"}
		for _, n := range notes {
			r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "%s", n)
		}
		g.Eventually(func(g Gomega) []string {
			var got []string
			for _, e := range list(g, ns) {
				g.Expect(e.Series).To(BeNil(), "no Event is a series")
				g.Expect(e.Regarding.UID).To(Equal(cm.UID))
				g.Expect(e.ReportingController).To(Equal("nudge"))
				got = append(got, e.Note)
			}
			return got
		}).WithTimeout(30*time.Second).Should(ConsistOf(notes), "three Events, each with its own note")
	})

	// After thousands of Events are written, the recorder holds none of
	// them (client-go's broadcaster keeps each 6 to 12 minutes, about
	// 0.7 KiB apiece: about 2 MiB for these).
	t.Run("written Events are not kept", func(t *testing.T) {
		const sent = 3000
		g := NewWithT(t)
		ctx := t.Context()
		ns := namespace(t)
		r, err := newRecorder(ctx, p.Config(), scheme, options.Default(), &Lull{}, prometheus.NewRegistry())
		g.Expect(err).NotTo(HaveOccurred())
		fast := rest.CopyConfig(p.Config())
		fast.QPS, fast.Burst = 2000, 2000
		c, err := eventsv1client.NewForConfig(fast)
		g.Expect(err).NotTo(HaveOccurred())
		r.client = c.RESTClient()
		r.Start(ctx)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", UID: "uid-app"}}
		// Warm up: the client's connections and the decoder's buffers.
		for i := range 100 {
			cm.ResourceVersion = fmt.Sprint(i)
			r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Rolled %d", i)
		}
		g.Eventually(r.waiting).WithTimeout(time.Minute).Should(BeZero(), "the warm-up's Events written")
		g.Expect(list(g, ns)).To(HaveLen(100), "the warm-up's Events written")
		before := heapInUse()
		for i := range sent {
			cm.ResourceVersion = fmt.Sprint(1000 + i)
			r.Eventf(cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Rolled %d", i)
			if r.waiting() > eventsMaxWaiting/2 {
				g.Eventually(r.waiting).WithTimeout(time.Minute).Should(BeNumerically("<", eventsMaxWaiting/4), "the writers catch up")
			}
		}
		g.Eventually(r.waiting).WithTimeout(2*time.Minute).Should(BeZero(), "every Event written")
		g.Expect(list(g, ns)).To(HaveLen(100+sent), "every Event written")
		g.Expect(testutil.ToFloat64(r.dropped)).To(BeZero())
		grown := heapInUse() - before
		t.Logf("Heap in use grew %d KiB over %d written Events", grown/1024, sent)
		g.Expect(grown).To(BeNumerically("<", 512<<10), "heap in use after %d Events, bytes", sent)
	})
}

// newRecorder is NewRecorder with opts' --kube-api-qps and --kube-api-burst.
func newRecorder(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme, opts options.Options, lull *Lull, reg prometheus.Registerer) (*Recorder, error) {
	return NewRecorder(ctx, cfg, scheme, opts.QPS, opts.Burst, lull, reg)
}

// writeEvery tells lull of a workload write now and every d after, until
// the returned stop is called or ctx is done.
func writeEvery(ctx context.Context, lull *Lull, d time.Duration) (stop func()) {
	writing, stop := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(d)
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
	return stop
}

// heapInUse returns the bytes of heap in use after a collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// The Events client's rate limit: eventsQPS, or nudge's own --kube-api-qps
// when lower. It was 50 a second, which spread a fan-out's Events over
// seconds and woke the writers for each (git log -S "Where nudge's CPU
// goes" finds the run).
func TestRecorderRate(t *testing.T) {
	tests := map[string]struct {
		qps  float32
		want float32
	}{
		"nudge's default --kube-api-qps leaves the Events' own limit, 500 a second": {qps: 500, want: 500},
		"a lower --kube-api-qps bounds it":                                          {qps: 20, want: 20},
		"a higher --kube-api-qps does not raise it":                                 {qps: 5000, want: eventsQPS},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			opts := options.Default()
			opts.QPS = tc.qps
			cfg := &rest.Config{Host: "https://127.0.0.1:1"}
			r, err := newRecorder(t.Context(), cfg, k8sruntime.NewScheme(), opts, &Lull{}, prometheus.NewRegistry())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.client.GetRateLimiter()).NotTo(BeNil())
			g.Expect(r.client.GetRateLimiter().QPS()).To(Equal(tc.want))
			g.Expect(cfg.QPS).To(BeZero(), "the caller's config is not changed")
		})
	}
}
