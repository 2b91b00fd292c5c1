package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/options"
)

// Events are written after rollouts, not among them (1 Event per rollout;
// the broadcaster buffers 1,000): on a client of their own, limited to
// eventsQPS and eventsBurst, so they never take the rollouts' share of the
// client's rate limit; and each waits until no workload has been written for
// eventsQuiet, or until eventsMaxDelay after it was recorded, so a burst of
// rollouts does not share the API server with its own Events.
//
// At most eventsMaxWaiting Events wait or are being written at once; the
// sink drops (and counts in nudge_events_dropped_total) any Event beyond
// that, as the API server itself may: client-go's broadcaster starts one
// goroutine per Event, so without a bound, more Events a second than the
// sink writes (eventsQPS) would pile up goroutines without end.
const (
	eventsQPS        = 50
	eventsBurst      = 100
	eventsQuiet      = 100 * time.Millisecond
	eventsMaxDelay   = 5 * time.Second
	eventsMaxWaiting = 1000
)

// eventRecorder returns an events.k8s.io recorder writing through sink, on
// its own, slower client; it stops with ctx.
func eventRecorder(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts options.Options, sink *yieldingSink) (events.EventRecorder, error) {
	ecfg := rest.CopyConfig(cfg)
	ecfg.QPS, ecfg.Burst = min(eventsQPS, opts.QPS), min(eventsBurst, opts.Burst)
	// The events.k8s.io client alone: the whole clientset would link (and
	// map into memory) a client for every API group.
	cs, err := eventsv1client.NewForConfig(ecfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	sink.EventSink = &events.EventSinkImpl{Interface: cs}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting the Event broadcaster: %w", err)
	}
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b.NewRecorder(scheme, "nudge"), nil
}

// yieldingSink creates each Event once lull allows it (see eventsQuiet),
// with at most cap(slots) Events waiting or being created at once; it drops
// the others. Set EventSink before use.
type yieldingSink struct {
	events.EventSink
	lull            *controller.Lull
	quiet, maxDelay time.Duration

	slots     chan struct{} // one per Event waiting or being created
	dropped   prometheus.Counter
	dropCount atomic.Int64
	dropLog   *rate.Sometimes
}

// newYieldingSink returns a sink waiting on lull with eventsQuiet,
// eventsMaxDelay and eventsMaxWaiting, counting the Events it drops in
// nudge_events_dropped_total, registered with reg (or reused when already
// there, nudge run twice in one process as in tests). It returns any other
// registration error.
func newYieldingSink(lull *controller.Lull, reg prometheus.Registerer) (*yieldingSink, error) {
	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nudge_events_dropped_total",
		Help: "Events nudge dropped instead of writing them, because " +
			fmt.Sprint(eventsMaxWaiting) + " were already waiting to be written.",
	})
	err := reg.Register(dropped)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		existing, ok := already.ExistingCollector.(prometheus.Counter)
		if !ok {
			return nil, err
		}
		dropped, err = existing, nil
	}
	if err != nil {
		return nil, err
	}
	return &yieldingSink{
		lull:     lull,
		quiet:    eventsQuiet,
		maxDelay: eventsMaxDelay,
		slots:    make(chan struct{}, eventsMaxWaiting),
		dropped:  dropped,
		dropLog:  &rate.Sometimes{Interval: time.Minute},
	}, nil
}

// Create creates e once lull allows it, or drops it at once when cap(slots)
// Events are waiting already. A dropped Event returns no error and no
// Event: client-go's broadcaster (recordEvent in tools/events) then neither
// retries nor logs it.
func (s *yieldingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	select {
	case s.slots <- struct{}{}:
	default:
		s.dropped.Inc()
		n := s.dropCount.Add(1)
		s.dropLog.Do(func() {
			ctrl.LoggerFrom(ctx).Info("Dropped Events: too many waiting to be written",
				"waiting", cap(s.slots), "dropped", n, "reason", e.Reason, "type", e.Type)
		})
		return nil, nil
	}
	defer func() { <-s.slots }()
	s.lull.Wait(ctx, s.quiet, e.EventTime.Add(s.maxDelay))
	return s.EventSink.Create(ctx, e)
}

// waiting returns how many Events are waiting or being created.
func (s *yieldingSink) waiting() int { return len(s.slots) }
