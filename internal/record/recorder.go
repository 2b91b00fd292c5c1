package record

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	recordutil "k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"

	nudgemetrics "nudge.dev/nudge/internal/metrics"
)

// Events are written after rollouts, not among them (1 Event per rollout):
// on a client of their own, limited to eventsQPS and eventsBurst (or to
// nudge's --kube-api-qps and --kube-api-burst when lower), so they never
// take the rollouts' share of the client's rate limit; and each waits
// until no workload has been written for eventsQuiet, or until
// eventsMaxDelay after it was recorded, so a burst of rollouts does not share
// the API server with its own Events.
//
// eventsQPS and eventsBurst were 50 and 100: the Events of a fan-out of 900
// then went out one every 20 ms for 18 s, and each woke the writers, the
// client's rate limiter and its HTTP/2 connection from idle (the Go
// scheduler's futex and epoll calls, costly on a virtual machine): nudge
// spent 1.81–1.87 CPU s on the fan-out with its Events at 500 a second
// against 2.57–2.83 at 50, at a load of 10–25 (`make bench`'s fan-out;
// docs/performance.md, "CPU and requests per rollout"). Written as fast as the API server takes
// them, the Events of a fan-out are done in a second or two, and fewer are
// dropped when rollouts come faster than 50 a second.
//
// eventsQuiet is a second, the pause after which the write headroom of the
// garbage collector is given back too (writeQuiet). It was 0.1 s: on a busy
// machine, rollouts one after another (a change, its rollout, the next
// change) were more than 0.1 s apart now and then, so the writers wrote the
// Events waiting, which slowed the next rollouts, which let more Events
// through: in `make bench`'s floor scenario at a load of 10, runs of 5 to 7
// changes took 100 to 220 ms instead of 7, with Events written between them
// (docs/performance.md, against the floor).
//
// At most eventsMaxWaiting Events wait or are being written at once; the
// recorder drops (and counts in nudge_events_dropped_total) any Event beyond
// that, as the API server itself may, so more Events a second than the
// client writes (eventsQPS) cost a bounded queue, not memory without end.
// eventsWriters goroutines write them; a write the API server could not be
// reached for is tried eventsTries times, eventsRetry apart (client-go's
// broadcaster tries 12 times, 10 s apart; a shorter wait keeps the queue
// moving after an API server restart).
const (
	eventsQPS        = 500
	eventsBurst      = eventsMaxWaiting
	eventsQuiet      = time.Second
	eventsMaxDelay   = 5 * time.Second
	eventsMaxWaiting = 1000
	eventsWriters    = 4
	eventsTries      = 6
	eventsRetry      = 5 * time.Second
)

// Recorder records events.k8s.io/v1 Events; it implements client-go's
// events.EventRecorder, so the reconcilers record through it as through
// client-go's, but it writes every Event as an object of its own, once, and
// keeps nothing of it once written.
//
// Why not client-go's broadcaster (tools/events): it keeps every Event it
// sends for 6 to 12 minutes in a series cache, to merge repeats of one
// (type, reason, action, object reference) into a series. nudge's Events do
// not repeat: the object reference holds the resourceVersion, which every
// rollout changes, and a Warning is recorded once when its cause appears
// (the reconciler's warnings), not per reconcile. So the cache merged nothing and
// held about 0.7 KiB per Event: at 15 Events a second, 7.5 MiB of heap and
// the whole RSS growth of a 30-minute soak (docs/performance.md). It also
// started two goroutines per Event.
type Recorder struct {
	scheme   *runtime.Scheme
	instance string         // reportingInstance: "nudge-" + host name, as client-go's
	client   rest.Interface // events.k8s.io/v1's
	log      logr.Logger

	lull            *Lull
	quiet, maxDelay time.Duration

	slots   chan struct{}        // one per Event waiting or being written
	queue   chan *eventsv1.Event // the Events waiting, oldest first
	stopped chan struct{}        // closed once Start's writers have stopped; nil before Start

	dropped   prometheus.Counter
	dropCount atomic.Int64
	dropLog   *rate.Sometimes
}

var _ events.EventRecorder = (*Recorder)(nil)

// NewRecorder returns a Recorder that writes through its own client (cfg's,
// in protobuf, limited to eventsQPS and eventsBurst, or to qps and burst, nudge's
// --kube-api-qps and --kube-api-burst, when lower), waiting on lull, and
// counts the Events it drops in nudge_events_dropped_total, registered with
// reg (or reused when already there, nudge run twice in one process as in
// tests). scheme must know the kinds of the objects Events are recorded
// about. Events are written once Start is called. It returns the client's or
// the registration's error.
func NewRecorder(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, qps float32, burst int, lull *Lull, reg prometheus.Registerer) (*Recorder, error) {
	ecfg := rest.CopyConfig(cfg)
	ecfg.QPS, ecfg.Burst = min(eventsQPS, qps), min(eventsBurst, burst)
	// A connection of their own (a dial function of its own keeps client-go
	// from sharing its cached transport, as binding.ownConnection does): the
	// Events of a fan-out, up to eventsQPS, would otherwise share one HTTP/2
	// connection with the manager's watches.
	ecfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	// Protobuf, not the generated client's default JSON, as every other
	// built-in kind nudge reads and writes (TestWireFormats): fewer bytes
	// and allocations each way. The request itself costs most of an
	// Event's CPU, not its encoding (BenchmarkEventWrite).
	ecfg.ContentType = runtime.ContentTypeProtobuf
	ecfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// The events.k8s.io client alone: the whole clientset would link (and
	// map into memory) a client for every API group.
	cs, err := eventsv1client.NewForConfig(ecfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	dropped, err := nudgemetrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nudge_events_dropped_total",
		Help: "Events nudge dropped instead of writing them, because " +
			fmt.Sprint(eventsMaxWaiting) + " were already waiting to be written.",
	}))
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	host, _ := os.Hostname()
	r := &Recorder{
		scheme:   scheme,
		instance: "nudge-" + host,
		client:   cs.RESTClient(),
		log:      ctrl.LoggerFrom(ctx).WithName("events"),
		lull:     lull,
		quiet:    eventsQuiet,
		maxDelay: eventsMaxDelay,
		slots:    make(chan struct{}, eventsMaxWaiting),
		queue:    make(chan *eventsv1.Event, eventsMaxWaiting),
		dropped:  dropped,
		dropLog:  &rate.Sometimes{Interval: time.Minute},
	}
	return r, nil
}

// Start writes the queued Events with eventsWriters goroutines of its own
// until ctx is done, and returns at once; the Events still waiting when ctx
// is done stay queued for Flush.
func (r *Recorder) Start(ctx context.Context) {
	r.stopped = make(chan struct{})
	go func() {
		defer close(r.stopped)
		r.run(ctx, eventsWriters)
	}()
}

// Flush writes the Events still queued once Start's context is done (nudge
// stopping: a rolling update of nudge, a node drained), without waiting for
// a lull, within timeout; it first waits for Start's writers to stop. It
// returns how many it wrote and how many it could not (the API server
// refused them, or timeout passed). A rollout's Event is otherwise lost
// with the process: a rollout made up to eventsMaxDelay before the stop
// would have none.
func (r *Recorder) Flush(timeout time.Duration) (written, left int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if r.stopped != nil {
		select {
		case <-r.stopped:
		case <-ctx.Done():
			return 0, r.waiting()
		}
	}
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range eventsWriters {
		wg.Go(func() {
			for {
				select {
				case e := <-r.queue:
					if r.post(ctx, e) {
						ok.Add(1)
					} else {
						failed.Add(1)
					}
					<-r.slots
				default:
					return
				}
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), int(failed.Load())
}

// Eventf records an Event about regarding (and related, when not nil) of
// eventtype (Normal or Warning), with note formatted by fmt.Sprintf, in
// regarding's namespace (default for a cluster-scoped object). It never
// blocks: when eventsMaxWaiting Events wait already, the Event is dropped,
// counted and, at most once a minute, logged. An object the scheme does not
// know, or another type, is logged and not recorded.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	e, err := r.event(time.Now(), regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		r.log.Error(err, "Did not record Event", "reason", reason, "type", eventtype)
		return
	}
	select {
	case r.slots <- struct{}{}:
		r.queue <- e // never blocks: a slot is held for each queued Event
	default:
		r.dropped.Inc()
		n := r.dropCount.Add(1)
		r.dropLog.Do(func() {
			r.log.Info("Dropped Events: too many waiting to be written",
				"waiting", cap(r.slots), "dropped", n, "reason", reason, "type", eventtype)
		})
	}
}

// event returns the Event of one Eventf at now, as client-go's recorder
// builds it (tools/events, makeEvent); it returns an error for an unknown
// type or an object without a reference.
func (r *Recorder) event(now time.Time, regarding, related runtime.Object, eventtype, reason, action, note string) (*eventsv1.Event, error) {
	if !recordutil.ValidateEventType(eventtype) {
		return nil, fmt.Errorf("unknown Event type %q", eventtype)
	}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("referring to the Event's object: %w", err)
	}
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      recordutil.GenerateEventName(ref.Name, now.UnixNano()),
			Namespace: ref.Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "nudge",
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Note:                note,
		Type:                eventtype,
	}
	if e.Namespace == "" {
		e.Namespace = metav1.NamespaceDefault
	}
	if related != nil {
		// As client-go: an Event whose related object has no reference
		// is recorded without it.
		e.Related, _ = reference.GetReference(r.scheme, related)
	}
	return e, nil
}

// run writes the queued Events with writers goroutines until ctx is done.
func (r *Recorder) run(ctx context.Context, writers int) {
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-r.queue:
					if !r.write(ctx, e) {
						// Stopped before it was written: back in
						// the queue (its slot still held) for Flush.
						r.queue <- e
						return
					}
					<-r.slots
				}
			}
		})
	}
	wg.Wait()
}

// write creates e once the lull allows it (see eventsQuiet), as post does.
// It returns false when ctx ended before e was written (see Flush), true
// when e was written or given up on.
func (r *Recorder) write(ctx context.Context, e *eventsv1.Event) bool {
	r.lull.Wait(ctx, r.quiet, e.EventTime.Add(r.maxDelay))
	if ctx.Err() != nil {
		return false
	}
	r.post(ctx, e)
	return ctx.Err() == nil
}

// post creates e, and reports whether the API server has it. A refusal of
// the API server, or a request that could not be built, is final (the same
// Event would fail again) and logged; a write that did not reach the API
// server is tried again, up to eventsTries times, until ctx is done.
func (r *Recorder) post(ctx context.Context, e *eventsv1.Event) bool {
	for try := 1; ; try++ {
		// The created Event in the answer is not decoded: nothing reads it.
		err := r.client.Post().Namespace(e.Namespace).Resource("events").Body(e).Do(ctx).Error()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var status apierrors.APIStatus
		var malformed *rest.RequestConstructionError
		refused := errors.As(err, &status) || errors.As(err, &malformed)
		if apierrors.IsAlreadyExists(err) {
			return true
		}
		if refused || try == eventsTries {
			r.log.Error(err, "Did not write Event", "reason", e.Reason, "type", e.Type,
				"regarding", e.Regarding.Kind+" "+e.Regarding.Namespace+"/"+e.Regarding.Name, "tries", try)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait.Jitter(eventsRetry, 0.25)):
		}
	}
}

// waiting returns how many Events wait or are being written.
func (r *Recorder) waiting() int { return len(r.slots) }
