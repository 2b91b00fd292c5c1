package fleet

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/workload"
)

// Waves bounds the rollouts nudge has started and that have not completed
// (--max-concurrent-rollouts), keeps the workloads waiting for a slot in
// order of priority, and remembers the changes whose rollout failed (see
// the halts). One Waves is shared by the reconcilers of every kind. Its
// state is rebuilt from the cache: the rollouts in flight and the failed
// ones from the workloads' status and nudge's annotations (seed), the
// waiting ones as they are reconciled, so a restart forgets none. Of the
// annotations, only those nudge sealed count (see RolledForAnnotation): a
// workload's editor can neither take a slot nor halt a change by writing
// them.
//
// The nil *Waves is off: every method does nothing, and every rollout may
// start at once. It is safe for concurrent use.
type Waves struct {
	max     int
	timeout time.Duration
	key     fingerprint.Key // of RolledForAnnotation's mark

	mu       sync.Mutex
	reader   client.Reader
	kinds    map[string]*waveKind
	inflight map[Key]flight
	queue    map[Key]*queued
	seq      uint64
	failures map[Key]failure              // see halts.go
	halts    map[haltKey]map[Key]struct{} // the failed workloads of each content
	// sourcesHalted counts, by namespace and source (haltKey with no
	// digest), the failures of halts: which sources' content to read.
	sourcesHalted map[haltKey]int
	full          bool           // failures reached maxFailures, and it was logged
	marked        map[Key]string // held workloads: the version nudge wrote the hold over
	held          map[Key]bool

	pending, halted prometheus.Gauge
}

type waveKind struct {
	kind    workload.Kind
	enqueue func(types.NamespacedName)
	seeded  bool
}

// Key names a workload of any kind.
type Key struct {
	Kind string
	types.NamespacedName
}

// Compare orders keys by kind, namespace, then name.
func (k Key) Compare(o Key) int {
	return cmp.Or(cmp.Compare(k.Kind, o.Kind), cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.Name, o.Name))
}

// flight is a rollout in flight; over is the resourceVersion nudge's
// rollout was written over: the cache's copy at that version does not show
// the rollout yet.
type flight struct{ over string }

// queued is a workload waiting for a slot (pending), or about to be
// reconciled after a change of one of its sources (expected): both rank.
type queued struct {
	priority int
	seq      uint64
	pending  bool
}

// NewWaves returns a Waves allowing max rollouts in flight, each failing
// after timeout (0: only a Deployment's progress deadline fails it), that
// marks and checks RolledForAnnotation with key, with its gauges
// nudge_pending_rollouts and nudge_halted_workloads registered with reg
// (reused when already there). It returns nil, off, when max is 0.
func NewWaves(reg prometheus.Registerer, max int, timeout time.Duration, key fingerprint.Key) (*Waves, error) {
	if max <= 0 {
		return nil, nil
	}
	w := &Waves{
		max: max, timeout: timeout, key: key,
		kinds: map[string]*waveKind{}, inflight: map[Key]flight{}, queue: map[Key]*queued{},
		failures: map[Key]failure{}, halts: map[haltKey]map[Key]struct{}{}, sourcesHalted: map[haltKey]int{}, marked: map[Key]string{}, held: map[Key]bool{},
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nudge_pending_rollouts",
			Help: "Workloads waiting for a rollout slot (--max-concurrent-rollouts)."}),
		halted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nudge_halted_workloads",
			Help: "Workloads held (nudge.dev/halted) because a rollout of the same change failed."}),
	}
	for _, g := range []*prometheus.Gauge{&w.pending, &w.halted} {
		var err error
		if *g, err = metrics.Register(reg, *g); err != nil {
			return nil, err
		}
	}
	w.pending.Set(0)
	w.halted.Set(0)
	return w, nil
}

// Register adds kind k, read through c, and returns the source that lets
// Waves enqueue its workloads when a slot frees.
func (w *Waves) Register(k workload.Kind, c client.Reader) func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk := &waveKind{kind: k, enqueue: func(types.NamespacedName) {}}
	w.kinds[k.Name()] = wk
	if w.reader == nil {
		w.reader = c
	}
	return func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		wk.enqueue = func(n types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: n}) }
		return nil
	}
}

// seed reads, once per kind, every workload of the kinds registered from
// the cache: the rollouts in flight, the failed ones and the holds nudge
// wrote. A kind that cannot be listed is logged and skipped, so that it
// never stalls the waves of the others. Called with w.mu held.
func (w *Waves) seed(ctx context.Context, now time.Time) {
	for name, wk := range w.kinds {
		if wk.seeded {
			continue
		}
		wk.seeded = true
		list := wk.kind.NewList()
		err := w.reader.List(ctx, list)
		var items []runtime.Object
		if err == nil {
			items, err = apimeta.ExtractList(list)
		}
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to count the rollouts in flight; counting none of this kind", "kind", name)
			continue
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			key := Key{name, client.ObjectKeyFromObject(obj)}
			w.observeLocked(ctx, key, obj, now)
			if _, ok := obj.GetAnnotations()[HaltedAnnotation]; ok {
				w.marked[key] = ""
			}
		}
	}
}

// Observe records where the rollout of workload key, as obj in the cache,
// stands: in flight, or not (a slot frees); a failure halts the change it
// rolled (see halts), a recovery ends that.
func (w *Waves) Observe(ctx context.Context, key Key, obj client.Object, now time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seed(ctx, now)
	w.observeLocked(ctx, key, obj, now)
}

func (w *Waves) observeLocked(ctx context.Context, key Key, obj client.Object, now time.Time) {
	if f, ok := w.inflight[key]; ok && f.over == obj.GetResourceVersion() {
		return // the cache has not seen the rollout yet
	}
	p, _, _, rolled := w.progressOf(key, obj, now)
	if p == Rolling {
		w.inflight[key] = flight{}
		w.forget(key)
		return
	}
	if _, ok := w.inflight[key]; ok {
		delete(w.inflight, key)
		defer w.kick()
	}
	if p != Failed {
		rolled = nil
	}
	if w.failed(ctx, key, rolled) {
		// Every workload waiting may be waiting on the failed change.
		for k, q := range w.queue {
			if q.pending {
				w.wake(k)
			}
		}
	}
}

// Acquire takes a slot for workload key of the given priority, unless the
// slots are taken by rollouts in flight and by waiting workloads that rank
// before it (higher priority, then first come); then it is pending, and is
// enqueued again when its turn comes.
func (w *Waves) Acquire(ctx context.Context, key Key, priority int, now time.Time) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seed(ctx, now)
	if _, ok := w.inflight[key]; ok {
		return true
	}
	q := w.enqueue(key, priority)
	if w.free(key, q) {
		delete(w.queue, key)
		w.inflight[key] = flight{}
		w.gauge()
		return true
	}
	q.pending = true
	w.gauge()
	return false
}

// Free reports whether workload key of the given priority may take a slot
// now (see Acquire), taking none.
func (w *Waves) Free(key Key, priority int) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inflight[key]; ok {
		return true
	}
	q := w.queue[key]
	if q == nil {
		q = &queued{priority: priority, seq: w.seq + 1}
	}
	q.priority = priority
	return w.free(key, q)
}

// Wait records that workload key of the given priority waits for a slot
// (Pending): it is enqueued again when its turn comes.
func (w *Waves) Wait(key Key, priority int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inflight[key]; ok {
		return
	}
	w.enqueue(key, priority).pending = true
	w.gauge()
}

// enqueue returns key's place among the workloads that rank for a slot,
// made the last when it has none, with the given priority. Called with
// w.mu held.
func (w *Waves) enqueue(key Key, priority int) *queued {
	q := w.queue[key]
	if q == nil {
		w.seq++
		q = &queued{seq: w.seq}
		w.queue[key] = q
	}
	q.priority = priority
	return q
}

// free reports whether a slot is free for key, ranking as q: the rollouts
// in flight and the workloads ranking before it leave one. Called with
// w.mu held.
func (w *Waves) free(key Key, q *queued) bool {
	ahead := 0
	for k, o := range w.queue {
		if k != key && before(o, q) {
			ahead++
		}
	}
	return len(w.inflight)+ahead < w.max
}

// before reports whether a ranks before b: higher priority, then first come.
func before(a, b *queued) bool {
	return cmp.Or(cmp.Compare(b.priority, a.priority), cmp.Compare(a.seq, b.seq)) < 0
}

// Rolled records that nudge's rollout of key was written over version over;
// Release gives back a slot taken for a rollout that was not written.
func (w *Waves) Rolled(key Key, over string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight[key] = flight{over: over}
	delete(w.marked, key)
}

func (w *Waves) Release(key Key) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inflight[key]; ok {
		delete(w.inflight, key)
		w.kick()
	}
}

// Expect ranks workloads about to be reconciled after a change of one of
// their sources, so that, of one change, those of higher priority take the
// first slots whatever order they are reconciled in.
func (w *Waves) Expect(key Key, priority int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.queue[key]; !ok {
		w.seq++
		w.queue[key] = &queued{priority: priority, seq: w.seq}
	}
}

// ExpectEach ranks, as Expect, the workloads reqs of kind, read from c
// (those it cannot read are left out); it does nothing on a nil Waves.
func (w *Waves) ExpectEach(ctx context.Context, c client.Reader, kind workload.Kind, reqs []reconcile.Request) {
	if w == nil {
		return
	}
	for _, req := range reqs {
		obj := kind.New()
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			continue
		}
		priority, _ := PriorityOf(obj)
		w.Expect(Key{Kind: kind.Name(), NamespacedName: req.NamespacedName}, priority)
	}
}

// Leave drops key from the waiting workloads (reconciled, and not pending);
// Gone also forgets whatever else is known of it (deleted).
func (w *Waves) Leave(key Key) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.queue[key]; ok {
		delete(w.queue, key)
		w.kick()
	}
}

func (w *Waves) Gone(key Key) {
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.marked, key)
	delete(w.held, key)
	w.forget(key)
	w.mu.Unlock()
	w.Release(key)
	w.Leave(key)
}

// kick enqueues the waiting workloads that rank first, as many as slots
// are free. Called with w.mu held.
func (w *Waves) kick() {
	free := w.max - len(w.inflight)
	if free > 0 {
		keys := slices.Collect(maps.Keys(w.queue))
		slices.SortFunc(keys, func(a, b Key) int { return cmp.Compare(w.queue[a].seq, w.queue[b].seq) })
		slices.SortStableFunc(keys, func(a, b Key) int { return cmp.Compare(w.queue[b].priority, w.queue[a].priority) })
		for _, k := range keys[:min(free, len(keys))] {
			w.wake(k)
		}
	}
	w.gauge()
}

func (w *Waves) wake(k Key) {
	if wk := w.kinds[k.Kind]; wk != nil {
		wk.enqueue(k.NamespacedName)
	}
}

// gauge sets the gauges. Called with w.mu held.
func (w *Waves) gauge() {
	n := 0
	for _, q := range w.queue {
		if q.pending {
			n++
		}
	}
	w.pending.Set(float64(n))
	w.halted.Set(float64(len(w.held)))
}
