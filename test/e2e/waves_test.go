package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// fleetWatch watches the Deployments of one namespace: how many are incomplete
// at each event (the most ever, the rule of --max-concurrent-rollouts) and
// how many times each one's pod template changed.
type fleetWatch struct {
	mu         sync.Mutex
	last       map[string]*appsv1.Deployment
	incomplete map[string]bool
	rollouts   map[string]int
	most       int
}

// complete is a Deployment's rollout complete, as nudge counts it (and
// `kubectl rollout status`).
func complete(d *appsv1.Deployment) bool {
	want, s := ptr.Deref(d.Spec.Replicas, 1), d.Status
	return s.ObservedGeneration >= d.Generation && s.Replicas == want && s.UpdatedReplicas == want &&
		s.ReadyReplicas == want && s.AvailableReplicas == want
}

func watchFleet(t *testing.T, ns string) *fleetWatch {
	t.Helper()
	c, err := client.NewWithWatch(plane.Config(), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatalf("creating a watch client: %v", err)
	}
	events := nt.Watch(t, c, &appsv1.DeploymentList{}, client.InNamespace(ns))
	f := &fleetWatch{last: map[string]*appsv1.Deployment{}, incomplete: map[string]bool{}, rollouts: map[string]int{}}
	go func() {
		for ev := range events {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			f.mu.Lock()
			if prev := f.last[d.Name]; prev != nil && !equality.Semantic.DeepEqual(prev.Spec.Template, d.Spec.Template) {
				f.rollouts[d.Name]++
			}
			f.last[d.Name] = d
			f.incomplete[d.Name] = !complete(d)
			n := 0
			for _, inc := range f.incomplete {
				if inc {
					n++
				}
			}
			f.most = max(f.most, n)
			f.mu.Unlock()
		}
	}()
	return f
}

// settled returns how many watched Deployments are complete and rolled
// rollouts times.
func (f *fleetWatch) settled(rollouts int) func() int {
	return func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for name, inc := range f.incomplete {
			if !inc && f.rollouts[name] == rollouts {
				n++
			}
		}
		return n
	}
}

func (f *fleetWatch) counts() (most int, rollouts map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rollouts = map[string]int{}
	for k, v := range f.rollouts {
		rollouts[k] = v
	}
	return f.most, rollouts
}

// createFleet creates the ConfigMap app and n Deployments named
// prefix-0..n-1 reading it, with annotations, and waits until every one is
// complete and baselined.
func createFleet(ctx context.Context, g *WithT, ns, prefix string, n int, annotations map[string]string, mutate func(*appsv1.Deployment)) {
	for i := range n {
		a := map[string]string{"nudge.dev/auto": "true"}
		for k, v := range annotations {
			a[k] = v
		}
		d := nt.Deployment(ns, fmt.Sprintf("%s-%d", prefix, i), 1, a, nt.EnvFrom("ConfigMap", "app"))
		if mutate != nil {
			mutate(d)
		}
		g.Expect(k8s.Create(ctx, d)).To(Succeed())
	}
}

// ready waits until every Deployment of ns is complete and baselined.
func ready(ctx context.Context, g *WithT, ns string, n int) {
	g.Eventually(func() int {
		var list appsv1.DeploymentList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		ok := 0
		for i := range list.Items {
			if d := &list.Items[i]; complete(d) && d.Annotations[workload.AppliedAnnotation] != "" {
				ok++
			}
		}
		return ok
	}).WithTimeout(120*time.Second).WithPolling(time.Second).Should(Equal(n), "%d Deployments running and baselined", n)
}

func changeApp(ctx context.Context, g *WithT, ns, value string) {
	var cm corev1.ConfigMap
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	cm.Data["a"] = value
	g.Expect(k8s.Update(ctx, &cm)).To(Succeed())
}

// replicaSets returns how many ReplicaSets each Deployment of ns owns.
func replicaSets(ctx context.Context, g *WithT, ns string) map[string]int {
	var list appsv1.ReplicaSetList
	g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	out := map[string]int{}
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil {
			out[ref.Name]++
		}
	}
	return out
}

func each(prefix string, n, v int) map[string]int {
	out := map[string]int{}
	for i := range n {
		out[fmt.Sprintf("%s-%d", prefix, i)] = v
	}
	return out
}

// 50 Deployments share a ConfigMap, --max-concurrent-rollouts 5: a watch
// never sees more than 5 incomplete at once, and every one rolls exactly once
// (one new ReplicaSet each).
func TestWavesOfFiftyDeployments(t *testing.T) {
	ctx, g, ns := namespace(t)
	const n, slots = 50, 5
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "1"}))).To(Succeed())
	createFleet(ctx, g, ns, "web", n, nil, nil)
	nt.Start(t, plane.Config(), ns, func(o *options.Options) { o.MaxConcurrentRollouts = slots })
	ready(ctx, g, ns, n)
	f := watchFleet(t, ns)

	changeApp(ctx, g, ns, "2")
	g.Eventually(func() float64 { return gauge("nudge_pending_rollouts") }).WithTimeout(20*time.Second).Should(
		BeNumerically(">", 0), "nudge_pending_rollouts counts the waiting ones")
	g.Eventually(f.settled(1)).WithTimeout(150*time.Second).WithPolling(time.Second).Should(Equal(n), "all %d rolled once and complete", n)
	g.Expect(gauge("nudge_pending_rollouts")).To(BeZero())
	most, rollouts := f.counts()
	g.Expect(most).To(BeNumerically("<=", slots), "never more than %d rollouts incomplete at once", slots)
	g.Expect(most).To(BeNumerically(">", 1), "rollouts overlap, in waves")
	g.Expect(rollouts).To(Equal(each("web", n, 1)), "each pod template changed once")
	g.Expect(replicaSets(ctx, g, ns)).To(Equal(each("web", n, 2)), "one new ReplicaSet each")
	t.Logf("at most %d of %d Deployments incomplete at once", most, n)
}

// nudge stopped mid-wave and started again: it counts the rollouts in
// flight from the cluster, forgets none of the waiting ones, and rolls none
// twice.
func TestWavesAcrossARestart(t *testing.T) {
	ctx, g, ns := namespace(t)
	const n, slots = 8, 2
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "1"}))).To(Succeed())
	// minReadySeconds keeps each wave in flight long enough to stop nudge
	// during it.
	createFleet(ctx, g, ns, "web", n, nil, func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 2 })
	opts := func(o *options.Options) { o.MaxConcurrentRollouts = slots }
	first := nt.Start(t, plane.Config(), ns, opts)
	ready(ctx, g, ns, n)
	f := watchFleet(t, ns)

	changeApp(ctx, g, ns, "2")
	g.Eventually(func() int { _, r := f.counts(); return len(r) }).WithTimeout(30*time.Second).Should(BeNumerically(">=", 1), "the first wave to start")
	first.Stop(t)
	_, before := f.counts()
	g.Expect(len(before)).To(BeNumerically("<", n), "nudge stopped mid-wave")
	nt.Start(t, plane.Config(), ns, opts)

	g.Eventually(f.settled(1)).WithTimeout(120*time.Second).WithPolling(time.Second).Should(Equal(n), "all %d rolled once and complete", n)
	most, rollouts := f.counts()
	g.Expect(most).To(BeNumerically("<=", slots), "never more than %d rollouts incomplete, across the restart", slots)
	g.Expect(rollouts).To(Equal(each("web", n, 1)), "none rolled twice, none forgotten")
	g.Expect(replicaSets(ctx, g, ns)).To(Equal(each("web", n, 2)))
}

// A change whose first wave fails: the canaries (highest priority) cannot
// schedule their new pods and pass their progress deadline; every other
// Deployment is held, with the annotation, a RolloutHalted Event, an alert
// and the metric, and never rolls. Removing the annotation resumes one; a
// new change resumes the rest.
func TestFirstWaveFailureHalts(t *testing.T) {
	ctx, g, ns := namespace(t)
	const canaries, others = 2, 6
	label := "e2e.nudge.dev/" + ns
	labelNodes(ctx, t, g, label, ptr.To("ok"))
	t.Cleanup(func() { labelNodes(context.Background(), t, NewWithT(t), label, nil) })
	hook := newAlertHook(t)

	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "1"}))).To(Succeed())
	createFleet(ctx, g, ns, "canary", canaries, map[string]string{fleet.PriorityAnnotation: "10"}, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{label: "ok"}
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
	})
	createFleet(ctx, g, ns, "web", others, nil, nil)
	nt.Start(t, plane.Config(), ns, func(o *options.Options) {
		o.MaxConcurrentRollouts = canaries
		o.Alert = alert.Config{Enabled: true, Sink: alert.SinkJSON, WebhookURL: hook.url}
	})
	ready(ctx, g, ns, canaries+others)
	f := watchFleet(t, ns)

	labelNodes(ctx, t, g, label, nil) // the canaries' new pods cannot schedule
	changeApp(ctx, g, ns, "bad")
	deployment := func(name string) *appsv1.Deployment {
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		return &d
	}
	for i := range others {
		name := fmt.Sprintf("web-%d", i)
		g.Eventually(func() map[string]string { return deployment(name).Annotations }).WithTimeout(60*time.Second).Should(
			HaveKeyWithValue(fleet.HaltedAnnotation, MatchRegexp(`^ConfigMap/`+ns+`/app=\S+ Deployment/`+ns+`/canary-[01]$`)),
			"%s held once a canary failed", name)
	}
	g.Eventually(func() []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}).WithTimeout(20*time.Second).Should(ContainElement(And(HaveField("Reason", record.ReasonRolloutHalted),
		HaveField("Regarding.Name", "web-0"), HaveField("Note", ContainSubstring("Deployment "+ns+"/canary-")))), "RolloutHalted naming the failed canary")
	g.Eventually(hook.received).WithTimeout(20*time.Second).Should(ContainElement(And(ContainSubstring(`"halted"`), ContainSubstring(`"name":"web-0"`))), "an alert of the halt")
	g.Expect(gauge("nudge_halted_workloads")).To(BeEquivalentTo(others), "nudge_halted_workloads")
	g.Consistently(func() map[string]int { _, r := f.counts(); return r }).WithTimeout(3*time.Second).Should(
		Equal(each("canary", canaries, 1)), "only the canaries rolled")

	// Removing the hold of one resumes it alone (it is schedulable).
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+fleet.HaltedAnnotation+`":null}}}`))
	g.Expect(k8s.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}, patch)).To(Succeed())
	g.Eventually(func() map[string]int { _, r := f.counts(); return r }).WithTimeout(30*time.Second).Should(
		HaveKeyWithValue("web-0", 1), "web-0 resumed")
	g.Consistently(func() map[string]int { _, r := f.counts(); return r }).WithTimeout(3*time.Second).Should(
		HaveLen(canaries+1), "the others still held")

	// A fix is a new change: everyone rolls to it.
	labelNodes(ctx, t, g, label, ptr.To("ok"))
	changeApp(ctx, g, ns, "fixed")
	want := each("canary", canaries, 2)
	for k, v := range each("web", others, 1) {
		want[k] = v
	}
	want["web-0"] = 2
	g.Eventually(func() map[string]int { _, r := f.counts(); return r }).WithTimeout(120*time.Second).WithPolling(time.Second).Should(
		Equal(want), "every Deployment rolled to the fix, the held ones once")
	for i := range others {
		g.Eventually(func() map[string]string { return deployment(fmt.Sprintf("web-%d", i)).Annotations }).WithTimeout(30*time.Second).ShouldNot(
			HaveKey(fleet.HaltedAnnotation), "the hold removed")
	}
	g.Eventually(func() float64 { return gauge("nudge_halted_workloads") }).WithTimeout(20 * time.Second).Should(BeZero())
}

// labelNodes sets (value not nil) or removes label on every Node.
func labelNodes(ctx context.Context, t *testing.T, g *WithT, label string, value *string) {
	t.Helper()
	var nodes corev1.NodeList
	g.Expect(k8s.List(ctx, &nodes)).To(Succeed())
	v := "null"
	if value != nil {
		v = strconv.Quote(*value)
	}
	for _, n := range nodes.Items {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+label+`":`+v+`}}}`))
		g.Expect(k8s.Patch(ctx, &n, patch)).To(Succeed())
	}
}

// gauge reads a gauge of nudge's metrics (nudge runs in this process).
func gauge(name string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// alertHook is a local alert endpoint that keeps every body it receives.
type alertHook struct {
	mu     sync.Mutex
	bodies []string
	url    string
}

func newAlertHook(t *testing.T) *alertHook {
	h := &alertHook{}
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *alertHook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}
