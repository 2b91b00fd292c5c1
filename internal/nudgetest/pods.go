package nudgetest

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodWatch is what a watch of a namespace's pods saw: how many were ever
// unavailable at once, how many came, and which were evicted (see
// WatchPods).
type PodWatch struct {
	mu       sync.Mutex
	want     int
	counting bool
	up       map[string]bool // by name: Ready and not on its way out
	most     int
	seen     map[string]string // pod UID → name, every pod ever seen
	evicted  map[string]string // pod UID → name, the pods evicted
}

// WatchPods watches until t ends the pods of namespace that opts select, of
// which want are expected Ready, and counts from the moment all want were
// Ready together.
func WatchPods(t testing.TB, c client.WithWatch, want int, opts ...client.ListOption) *PodWatch {
	t.Helper()
	w := &PodWatch{want: want, up: map[string]bool{}, seen: map[string]string{}, evicted: map[string]string{}}
	events := Watch(t, c, &corev1.PodList{}, opts...)
	go func() {
		for e := range events {
			if p, ok := e.Object.(*corev1.Pod); ok {
				w.saw(e.Type, p)
			}
		}
	}()
	return w
}

func (w *PodWatch) saw(t watch.EventType, p *corev1.Pod) {
	ready, evicted := false, false
	for _, c := range p.Status.Conditions {
		ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		evicted = evicted || (c.Type == corev1.DisruptionTarget && c.Reason == evictionReason)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen[string(p.UID)] = p.Name
	if evicted {
		w.evicted[string(p.UID)] = p.Name
	}
	w.up[p.Name] = t != watch.Deleted && p.DeletionTimestamp == nil && ready
	n := 0
	for _, u := range w.up {
		if u {
			n++
		}
	}
	w.counting = w.counting || n == w.want
	if w.counting {
		w.most = max(w.most, w.want-n)
	}
}

// MostUnavailable returns the most pods that were not Ready (or missing
// from the count wanted) at once, since all were first Ready together.
func (w *PodWatch) MostUnavailable() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most
}

// Pods returns how many pods, each its own UID, the watch has seen.
func (w *PodWatch) Pods() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// evictionReason is the reason of the DisruptionTarget condition the API
// server sets on a pod it evicts through the Eviction API, before it deletes
// it (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go).
const evictionReason = "EvictionByEvictionAPI"

// Evicted returns how many pods the Eviction API evicted under each name:
// those whose DisruptionTarget condition says so. Unlike Seen, it counts
// no pod deleted otherwise (kwok's fake kubelet may delete a StatefulSet's
// successor by the name of the pod it removes).
func (w *PodWatch) Evicted() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, name := range w.evicted {
		out[name]++
	}
	return out
}
