package model_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/test/model"
)

var (
	windowSeedFlag     = flag.Uint64("window-seed", 0, "replay the one window stream of this seed (TestWindowStreams; printed on failure)")
	windowStreamsFlag  = flag.Int("window-streams", 3, "window streams TestWindowStreams plays, from random seeds (more for a soak)")
	windowLengthFlag   = flag.Duration("window-length", 6*time.Second, "how long each window stream of TestWindowStreams updates its ConfigMaps")
	windowRestartsFlag = flag.Int("window-restarts", 2, "how many times each window stream kills and restarts nudge")
)

// streamWindow is the rollout window of the window streams: their quiet gap
// is rollout.Quiet(2 s) = 400 ms.
const streamWindow = 2 * time.Second

// The rollout window under random streams: nudge runs with a 2 s window
// (400 ms quiet gap) while a seeded random stream updates three ConfigMaps,
// read by one Deployment each and one reading two, many updates within the
// quiet gap of the previous update of the same ConfigMap and some far apart
// (model.PlanStream), nudge killed (a kill -9 with -nudge-bin, else a stop)
// and started again at random points without the stream settling. Every
// update's resourceVersion and every pod-template change of each Deployment
// (from a watch, with its resourceVersion and the applied state written
// with it) are recorded, and each Deployment's history, ordered by
// resourceVersion, must keep model.History.Check's rules: none without a
// change, at most one rollout per distinct content, no rollout back, and,
// once the stream settled, nothing lost. -window-seed replays one stream;
// -window-streams, -window-length and -window-restarts size the run.
func TestWindowStreams(t *testing.T) {
	seeds := []uint64{*windowSeedFlag}
	if *windowSeedFlag == 0 {
		seeds = nil
		for range *windowStreamsFlag {
			seeds = append(seeds, rand.Uint64()>>1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			s := newStream(t, seed)
			s.play()
			s.settle()
			var violations []string
			var rolled []string
			for _, name := range slices.Sorted(maps.Keys(model.StreamWorkloads())) {
				h := s.history(name)
				rolled = append(rolled, fmt.Sprintf("%s %d", name, len(h.Rollouts)))
				for _, v := range h.Check() {
					violations = append(violations, v.String())
				}
			}
			t.Logf("seed %d: %d updates, %d restarts; rollouts: %s", seed, len(s.updates), len(s.restarts), strings.Join(rolled, ", "))
			if len(violations) > 0 {
				t.Fatal(s.report(violations))
			}
		})
	}
}

// stream is one window stream being played in its own namespace.
type stream struct {
	t     *testing.T
	ctx   context.Context
	seed  uint64
	ns    string
	run   runner
	plan  []model.StreamStep
	key   fingerprint.Key
	log   *rolloutLog
	start int64 // the resourceVersion of the baselines, after which rollouts count

	versions map[string]int // the last version written of each ConfigMap
	updates  []model.Update
	restarts []restart
	final    map[string]map[string]int
}

// restart is one kill and start of nudge: when the kill began and how long
// both took.
type restart struct {
	at   time.Time
	took time.Duration
}

// newStream creates the stream's ConfigMaps (version 0) and Deployments,
// starts nudge, and returns once nudge has recorded every Deployment's
// baseline and the rollouts are watched.
func newStream(t *testing.T, seed uint64) *stream {
	ns, err := suite.Plane.GenerateNamespace(t.Context(), "window-")
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{t: t, ctx: t.Context(), seed: seed, ns: ns, versions: map[string]int{},
		plan: model.PlanStream(seed, *windowLengthFlag, rollout.Quiet(streamWindow), streamWindow, *windowRestartsFlag)}
	s.run = &inProcess{t: t, ns: ns, window: streamWindow}
	if *nudgeBinFlag != "" {
		s.run = &processes{t: t, ns: ns, window: streamWindow}
	}
	for _, name := range model.StreamSources() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": content(0)}}
		if err := suite.K8s.Create(s.ctx, cm); err != nil {
			t.Fatal(err)
		}
		s.versions[name] = 0
	}
	for name, sources := range model.StreamWorkloads() {
		uses := map[model.SourceID]model.Use{}
		for _, src := range sources {
			uses[model.SourceID{Kind: model.ConfigMap, Name: src}] = model.Whole
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"nudge.dev/auto": "true"}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: template(name, uses, 0),
			},
		}
		if err := suite.K8s.Create(s.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	s.run.start()
	s.wait(func() bool {
		for name, sources := range model.StreamWorkloads() {
			var d appsv1.Deployment
			if err := suite.K8s.Get(s.ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
				return false
			}
			for _, src := range sources {
				if !strings.Contains(d.Annotations[appliedAnnotation], " ConfigMap/"+src+"=") {
					return false
				}
			}
		}
		return true
	}, time.Minute, "nudge to record every Deployment's baseline")
	s.key, err = fingerprint.ReadKey(s.ctx, suite.K8s, ns, options.Default().KeySecret)
	if err != nil {
		t.Fatal(err)
	}
	for name := range model.StreamWorkloads() {
		if got, want := s.applied(name), model.Versions(model.StreamWorkloads()[name], nil); !maps.Equal(got, want) {
			t.Fatalf("%s's baseline holds %v, want %v", name, got, want)
		}
	}
	s.log, s.start = watchRollouts(t, ns)
	return s
}

// content is the value of the key k of a ConfigMap's version v: every
// version of the stream writes other content.
func content(v int) string { return "v" + strconv.Itoa(v) }

// play performs the plan's steps, each at its time after the start; a step
// whose time passed while a restart took its time comes at once.
func (s *stream) play() {
	began := time.Now()
	for _, step := range s.plan {
		select {
		case <-time.After(time.Until(began.Add(step.At))):
		case <-s.ctx.Done():
			s.t.Fatal(s.ctx.Err())
		}
		if step.Restart() {
			at := time.Now()
			s.run.stop(true)
			s.run.start()
			s.restarts = append(s.restarts, restart{at: at, took: time.Since(at)})
			continue
		}
		s.versions[step.Source]++
		v := s.versions[step.Source]
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: step.Source}}
		patch := fmt.Sprintf(`{"data":{"k":%q}}`, content(v))
		if err := suite.K8s.Patch(s.ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			s.t.Fatalf("updating ConfigMap %s to v%d: %v", step.Source, v, err)
		}
		s.updates = append(s.updates, model.Update{Source: step.Source, Version: v, RV: resourceVersion(s.t, cm), At: time.Now()})
	}
}

// settle waits up to a minute for every Deployment's applied state to hold
// the last versions (the check says which did not), then 3 s (the window
// and a second) for a late rollout to show, then for the watch to have
// delivered every Deployment's current version; it reads the applied
// states then.
func (s *stream) settle() {
	last := model.Versions(model.StreamSources(), s.updates)
	done := func() bool {
		for name, sources := range model.StreamWorkloads() {
			got := s.applied(name)
			for _, src := range sources {
				if got[src] != last[src] {
					return false
				}
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for !done() && time.Now().Before(deadline) && s.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond) // the polling interval of the wait for the last versions
	}
	select {
	case <-time.After(streamWindow + time.Second): // a "nothing more happens" observation
	case <-s.ctx.Done():
		s.t.Fatal(s.ctx.Err())
	}
	s.final = map[string]map[string]int{}
	for name := range model.StreamWorkloads() {
		var d appsv1.Deployment
		if err := suite.K8s.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &d); err != nil {
			s.t.Fatal(err)
		}
		rv := resourceVersion(s.t, &d)
		s.wait(func() bool { return s.log.caughtUp(name, rv) }, 30*time.Second,
			fmt.Sprintf("the watch to deliver Deployment %s at rv %d", name, rv))
		s.final[name] = s.versionsOf(name, d.Annotations[appliedAnnotation])
	}
}

// history returns what happened to the Deployment name.
func (s *stream) history(name string) model.History {
	h := model.History{Workload: name, Sources: model.StreamWorkloads()[name], Start: s.start, Updates: s.updates, Final: s.final[name]}
	for _, r := range s.log.of(name) {
		h.Rollouts = append(h.Rollouts, model.Rollout{RV: r.rv, At: r.at, Wrote: s.versionsOf(name, r.applied)})
	}
	return h
}

// applied returns the versions the Deployment's applied state holds now;
// nil when it cannot be read.
func (s *stream) applied(name string) map[string]int {
	var d appsv1.Deployment
	if err := suite.K8s.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &d); err != nil {
		return nil
	}
	return s.versionsOf(name, d.Annotations[appliedAnnotation])
}

// versionsOf returns the version of each of the Deployment's sources an
// applied state holds, found by computing the digest of every version
// written with nudge's key: model.Unknown for a digest of none, nil for a
// state that cannot be read.
func (s *stream) versionsOf(name, applied string) map[string]int {
	st, err := fingerprint.Parse(applied, s.ns)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, src := range model.StreamWorkloads()[name] {
		source := refs.Source{Kind: refs.ConfigMap, Namespace: s.ns, Name: src}
		e, ok := st.Entries[source]
		if !ok {
			continue
		}
		out[src] = model.Unknown
		for v := range s.versions[src] + 1 {
			if s.key.Source(refs.Reference{Source: source}, fingerprint.Digests{"k": fingerprint.SumString(content(v))}) == e.Digest {
				out[src] = v
			}
		}
	}
	return out
}

// wait polls cond every 20 ms until it holds, failing the test after limit.
func (s *stream) wait(cond func() bool, limit time.Duration, what string) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("waited %s for %s", limit, what)
		}
		if err := s.ctx.Err(); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the polling interval of a wait for a condition
	}
}

// report describes a stream that broke the rules: the seed, how to replay
// it, the stream as the test saw it (updates, restarts, rollouts, by time)
// and the violations.
func (s *stream) report(violations []string) string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, u := range s.updates {
		lines = append(lines, line{u.At, fmt.Sprintf("rv %d update %s v%d", u.RV, u.Source, u.Version)})
	}
	for _, r := range s.restarts {
		lines = append(lines, line{r.at, fmt.Sprintf("nudge killed and started again (took %s)", r.took.Round(time.Millisecond))})
	}
	for _, name := range slices.Sorted(maps.Keys(model.StreamWorkloads())) {
		for _, r := range s.history(name).Rollouts {
			var wrote []string
			for _, src := range model.StreamWorkloads()[name] {
				v, ok := r.Wrote[src]
				if !ok || v == model.Unknown {
					wrote = append(wrote, src+" v?")
				} else {
					wrote = append(wrote, fmt.Sprintf("%s v%d", src, v))
				}
			}
			lines = append(lines, line{r.At, fmt.Sprintf("rv %d rollout %s wrote %s", r.RV, name, strings.Join(wrote, ", "))})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (replay with: go test ./test/model -run 'TestWindowStreams' -v -window-seed %d -window-length %s -window-restarts %d), namespace %s, baselines before rv %d\n",
		s.seed, s.seed, *windowLengthFlag, *windowRestartsFlag, s.ns, s.start)
	b.WriteString("the stream, as the test saw it (updates when their write returned, rollouts when the watch delivered them):\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	fmt.Fprintf(&b, "violations:\n  %s", strings.Join(violations, "\n  "))
	return b.String()
}

// rolloutLog follows the Deployments of a namespace, from a watch that
// resumes where it broke off, and records each pod-template change: its
// resourceVersion, when the watch delivered it, and the applied state
// written with it (nudge writes the trigger and the state in one patch).
type rolloutLog struct {
	mu        sync.Mutex
	templates map[string]corev1.PodTemplateSpec
	seen      map[string]int64
	rollouts  map[string][]seenRollout
}

type seenRollout struct {
	rv      int64
	at      time.Time
	applied string
}

// watchRollouts lists the namespace's Deployments and follows them from
// the list's resourceVersion, which it returns.
func watchRollouts(t *testing.T, ns string) (*rolloutLog, int64) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(suite.Plane.Config())
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Deployments: %v", err)
	}
	l := &rolloutLog{templates: map[string]corev1.PodTemplateSpec{}, seen: map[string]int64{}, rollouts: map[string][]seenRollout{}}
	for i := range list.Items {
		d := &list.Items[i]
		l.templates[d.Name], l.seen[d.Name] = d.Spec.Template, resourceVersion(t, d)
	}
	lw := cache.NewListWatchFromClient(cs.AppsV1().RESTClient(), "deployments", ns, fields.Everything())
	rw, err := watchtools.NewRetryWatcherWithContext(t.Context(), list.ResourceVersion, lw)
	if err != nil {
		t.Fatalf("watching Deployments: %v", err)
	}
	t.Cleanup(rw.Stop)
	go func() {
		for ev := range rw.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				l.saw(d)
			}
		}
	}()
	return l, resourceVersion(t, list)
}

func (l *rolloutLog) saw(d *appsv1.Deployment) {
	rv, err := strconv.ParseInt(d.ResourceVersion, 10, 64)
	if err != nil {
		return // never from etcd, whose revisions are numbers
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[d.Name] = max(l.seen[d.Name], rv)
	if prev, ok := l.templates[d.Name]; ok && !equality.Semantic.DeepEqual(prev, d.Spec.Template) {
		l.rollouts[d.Name] = append(l.rollouts[d.Name], seenRollout{rv: rv, at: time.Now(), applied: d.Annotations[appliedAnnotation]})
	}
	l.templates[d.Name] = d.Spec.Template
}

// caughtUp reports whether the watch delivered the Deployment at rv or
// later.
func (l *rolloutLog) caughtUp(name string, rv int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[name] >= rv
}

// of returns the Deployment's rollouts so far, by resourceVersion.
func (l *rolloutLog) of(name string) []seenRollout {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.SortedFunc(slices.Values(l.rollouts[name]), func(a, b seenRollout) int { return cmp.Compare(a.rv, b.rv) })
}

// resourceVersion returns an object's resourceVersion as the number it is
// (etcd's revision), failing t when it is not one.
func resourceVersion(t *testing.T, o interface{ GetResourceVersion() string }) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", o.GetResourceVersion(), err)
	}
	return rv
}
