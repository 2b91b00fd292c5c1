package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// reportingController is the name nudge's Events carry.
const reportingController = "nudge"

// timeline follows namespace shop through watches on Deployments,
// ReplicaSets, Pods and Events (events.k8s.io/v1), and through nudge's log,
// and prints every change a user would see, one line each, timed from the
// start of the current phase. Times are when the demo received the
// observation, as `kubectl get -w` would show it.
type timeline struct {
	p       *printer
	watches []watch.Interface
	logs    chan logLine
	restore func()        // gives nudge's log lines back to their usual sink
	nudge   *nudgeProcess // the phase fails when it exits

	// State last printed, to print changes only.
	restartedAt string           // the Deployment's trigger annotation
	complete    bool             // the Deployment's rollout is complete
	rsReplicas  map[string]int32 // ReplicaSet name → desired replicas
	podStates   map[string]string
	oldPods     map[string]bool // pods that existed when the phase began

	phase phase
}

// phase is what the timeline saw since the start of a phase, as durations
// from its start; zero means not seen.
type phase struct {
	start                           time.Time
	trigger, event, logged, rsNew   time.Duration
	complete, lastRunning, lastGone time.Duration
	newRunning, oldGone, oldAtStart int
}

// startTimeline lists the objects of namespace shop and watches them from
// there, so that no change after it returns goes unseen, and takes over
// nudge's interesting log lines. Call stop when done.
func startTimeline(ctx context.Context, p *printer, cs kubernetes.Interface, n *nudgeProcess) (*timeline, error) {
	t := &timeline{
		p:          p,
		nudge:      n,
		logs:       make(chan logLine, 64),
		rsReplicas: map[string]int32{},
		podStates:  map[string]string{},
		oldPods:    map[string]bool{},
	}
	ns := shopNamespace
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	for _, d := range deps.Items {
		if d.Name == deployment {
			t.restartedAt = d.Spec.Template.Annotations[workload.RestartedAtAnnotation]
		}
	}
	rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	for _, rs := range rss.Items {
		t.rsReplicas[rs.Name] = desired(&rs)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	for _, pod := range pods.Items {
		t.podStates[pod.Name] = podState(&pod)
	}
	events, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	// Each watch starts where its list ended, and resumes from the last
	// version it saw when the API server closes it (client-go's
	// RetryWatcher): no change in between is lost.
	for _, w := range []struct {
		start func(context.Context, metav1.ListOptions) (watch.Interface, error)
		from  string
	}{
		{cs.AppsV1().Deployments(ns).Watch, deps.ResourceVersion},
		{cs.AppsV1().ReplicaSets(ns).Watch, rss.ResourceVersion},
		{cs.CoreV1().Pods(ns).Watch, pods.ResourceVersion},
		{cs.EventsV1().Events(ns).Watch, events.ResourceVersion},
	} {
		watcher, err := watchtools.NewRetryWatcherWithContext(ctx, w.from, &cache.ListWatch{WatchFuncWithContext: w.start})
		if err != nil {
			t.stop()
			return nil, fmt.Errorf("watching namespace %s: %w", ns, err)
		}
		t.watches = append(t.watches, watcher)
	}
	// Never blocks: nudge must not stall on its output. A line dropped here
	// is still in its log file.
	t.restore = n.divert(func(l logLine) {
		select {
		case t.logs <- l:
		default:
		}
	})
	return t, nil
}

// stop ends the watches and gives nudge's log lines back.
func (t *timeline) stop() {
	for _, w := range t.watches {
		w.Stop()
	}
	if t.restore != nil {
		t.restore()
		t.restore = nil
	}
}

// begin starts a phase at start: times are printed from there, and the
// pods that exist now count as old.
func (t *timeline) begin(start time.Time) {
	t.phase = phase{start: start}
	clear(t.oldPods)
	for name, state := range t.podStates {
		if state != "gone" {
			t.oldPods[name] = true
		}
	}
	t.phase.oldAtStart = len(t.oldPods)
}

// follow prints what it observes until done reports true after an
// observation (nil: never), until timeout passes (an error when done is
// given, the end of the phase otherwise), or until ctx ends.
func (t *timeline) follow(ctx context.Context, timeout time.Duration, what string, done func(*phase) bool) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		var ev watch.Event
		var watched, ok bool
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-timer.C:
			if done == nil {
				return nil
			}
			return fmt.Errorf("gave up after %v waiting for %s; seen: %s", timeout, what, t.phase.summary())
		case <-t.nudge.done:
			return fmt.Errorf("waiting for %s: %w", what, t.nudge.exited())
		case l := <-t.logs:
			t.logLine(l)
		case ev, ok = <-t.watches[0].ResultChan():
			watched = true
		case ev, ok = <-t.watches[1].ResultChan():
			watched = true
		case ev, ok = <-t.watches[2].ResultChan():
			watched = true
		case ev, ok = <-t.watches[3].ResultChan():
			watched = true
		}
		if watched {
			if !ok {
				return fmt.Errorf("a watch of namespace %s ended early", shopNamespace)
			}
			if err := t.observe(ev); err != nil {
				return err
			}
		}
		if done != nil && done(&t.phase) {
			return nil
		}
	}
}

// observe prints what a watch event shows.
func (t *timeline) observe(ev watch.Event) error {
	if ev.Type == watch.Error {
		return fmt.Errorf("watching namespace %s: %v", shopNamespace, ev.Object)
	}
	switch obj := ev.Object.(type) {
	case *appsv1.Deployment:
		t.deploymentChanged(obj)
	case *appsv1.ReplicaSet:
		t.replicaSetChanged(ev.Type, obj)
	case *corev1.Pod:
		t.podChanged(ev.Type, obj)
	case *eventsv1.Event:
		if ev.Type == watch.Added {
			t.eventAdded(obj)
		}
	}
	return nil
}

func (t *timeline) since() time.Duration { return time.Since(t.phase.start) }

func (t *timeline) logLine(l logLine) {
	if strings.HasPrefix(l.message, rolledMessage) && t.phase.logged == 0 {
		t.phase.logged = t.since()
	}
	t.p.event(t.since(), "nudge log", l.display())
}

func (t *timeline) deploymentChanged(d *appsv1.Deployment) {
	if d.Name != deployment {
		return
	}
	if at := d.Spec.Template.Annotations[workload.RestartedAtAnnotation]; at != t.restartedAt {
		t.restartedAt = at
		t.complete = false
		if t.phase.trigger == 0 {
			t.phase.trigger = t.since()
		}
		t.p.event(t.since(), "deployment/"+d.Name, fmt.Sprintf("pod template annotated by nudge: %s=%s",
			workload.RestartedForAnnotation, d.Spec.Template.Annotations[workload.RestartedForAnnotation]))
	}
	s := d.Status
	complete := s.ObservedGeneration == d.Generation && s.Replicas == replicas && s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas
	if complete && !t.complete && t.phase.trigger != 0 {
		t.phase.complete = t.since()
		t.p.event(t.since(), "deployment/"+d.Name, fmt.Sprintf("rollout complete: %d/%d pods up to date and available", s.UpdatedReplicas, replicas))
	}
	t.complete = complete
}

func (t *timeline) replicaSetChanged(typ watch.EventType, rs *appsv1.ReplicaSet) {
	name := "replicaset/" + rs.Name
	n := desired(rs)
	previous, known := t.rsReplicas[rs.Name]
	switch {
	case typ == watch.Deleted:
		delete(t.rsReplicas, rs.Name)
		t.p.event(t.since(), name, "deleted")
	case !known:
		t.rsReplicas[rs.Name] = n
		if t.phase.rsNew == 0 {
			t.phase.rsNew = t.since()
		}
		t.p.event(t.since(), name, fmt.Sprintf("created (revision %s), desired %d",
			rs.Annotations[revisionAnnotation], n))
	case previous != n:
		t.rsReplicas[rs.Name] = n
		t.p.event(t.since(), name, fmt.Sprintf("desired %d → %d", previous, n))
	}
}

func (t *timeline) podChanged(typ watch.EventType, pod *corev1.Pod) {
	state := podState(pod)
	if typ == watch.Deleted {
		state = "gone"
	}
	if t.podStates[pod.Name] == state {
		return
	}
	t.podStates[pod.Name] = state
	age := "new"
	if t.oldPods[pod.Name] {
		age = "old"
	}
	switch {
	case age == "new" && state == "Running":
		t.phase.newRunning++
		t.phase.lastRunning = t.since()
	case age == "old" && state == "gone":
		t.phase.oldGone++
		t.phase.lastGone = t.since()
	}
	t.p.event(t.since(), "pod/"+pod.Name, fmt.Sprintf("%-11s (%s pod)", state, age))
}

func (t *timeline) eventAdded(ev *eventsv1.Event) {
	if ev.ReportingController != reportingController && ev.Reason != record.ReasonRolled {
		return
	}
	if ev.Reason == record.ReasonRolled && t.phase.event == 0 {
		t.phase.event = t.since()
	}
	t.p.event(t.since(), "event", fmt.Sprintf("%s %s %s/%s: %s",
		ev.Type, ev.Reason, strings.ToLower(ev.Regarding.Kind), ev.Regarding.Name, ev.Note))
}

// podState returns a pod's state in the words of `kubectl get pods`, coarser:
// Pending, Running (ready), Terminating, Succeeded or Failed.
func podState(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Terminating"
	}
	if pod.Status.Phase == corev1.PodRunning {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return "Running"
			}
		}
		return "Running (not ready)"
	}
	return string(pod.Status.Phase)
}

// desired returns a ReplicaSet's desired replicas.
func desired(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// summary says which milestones of a rollout the phase saw, for errors.
func (ph *phase) summary() string {
	seen := func(d time.Duration) string {
		if d == 0 {
			return "no"
		}
		return fmt.Sprintf("at %+.3fs", d.Seconds())
	}
	return fmt.Sprintf("trigger %s, Rolled Event %s, log line %s, new ReplicaSet %s, %d new pods Running, %d/%d old pods gone, rollout complete %s",
		seen(ph.trigger), seen(ph.event), seen(ph.logged), seen(ph.rsNew), ph.newRunning, ph.oldGone, ph.oldAtStart, seen(ph.complete))
}
