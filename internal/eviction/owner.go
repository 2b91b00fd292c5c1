package eviction

import (
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner is what a restart reads of the workload whose pods it evicts.
type Owner struct {
	// Selector selects its pods; nil for a kind that has none (a custom
	// resource that owns its pods directly): the namespace's pods it
	// controls are its own.
	Selector labels.Selector
	// Want is how many pods it wants; 0 when it does not say.
	Want int
	// Observed says its controller has observed its latest generation, so
	// that a pod it re-creates now is made from the changed template; true
	// for a kind without status.observedGeneration.
	Observed bool
}

// OwnerOf reads obj, a workload as the API server serves it (not a trimmed
// cache's copy): a StatefulSet's selector and replicas, a DaemonSet's
// selector and desired number scheduled, and of any other kind (an
// unstructured custom resource) spec.selector when it is a label selector,
// spec.replicas and status.observedGeneration when present. It returns an
// error for a selector that does not parse.
func OwnerOf(obj client.Object) (Owner, error) {
	var sel *metav1.LabelSelector
	o := Owner{Observed: true}
	switch w := obj.(type) {
	case *appsv1.StatefulSet:
		sel, o.Want = w.Spec.Selector, int(ptr.Deref(w.Spec.Replicas, 1))
		o.Observed = w.Status.ObservedGeneration >= w.Generation
	case *appsv1.DaemonSet:
		sel, o.Want = w.Spec.Selector, int(w.Status.DesiredNumberScheduled)
		o.Observed = w.Status.ObservedGeneration >= w.Generation
	case *unstructured.Unstructured:
		if m, found, _ := unstructured.NestedMap(w.Object, "spec", "selector"); found {
			sel = &metav1.LabelSelector{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, sel); err != nil {
				return Owner{}, fmt.Errorf("reading spec.selector of %s %s: %w", w.GetKind(), w.GetName(), err)
			}
		}
		if n, found, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); found {
			o.Want = int(n)
		}
		if g, found, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration"); found {
			o.Observed = g >= w.GetGeneration()
		}
	}
	if sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return Owner{}, fmt.Errorf("reading the selector of %s: %w", obj.GetName(), err)
		}
		o.Selector = s
	}
	return o, nil
}

// Backoff spaces the attempts of evictions a PodDisruptionBudget refused,
// per workload: 1 s, 2 s, 4 s … up to a minute. It is safe for concurrent
// use; the zero value is ready.
type Backoff struct {
	mu    sync.Mutex
	tries map[string]int
}

// Next returns how long to wait before trying key's eviction again, and
// counts the try.
func (b *Backoff) Next(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tries == nil {
		b.tries = map[string]int{}
	}
	n := b.tries[key]
	b.tries[key] = n + 1
	return min(time.Second<<min(n, 6), time.Minute)
}

// Reset forgets key's tries: its eviction went through, or its restart
// ended.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.tries, key)
}
