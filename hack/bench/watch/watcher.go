// Package watch watches the workloads a run changes and records their
// rollouts (Watcher): each change of a pod template, when the bench saw it
// and the resourceVersion of the write that made it, and when each workload
// first carried the controller's baseline annotation.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Rollout is a change of one Deployment's (or watched kind's) pod template, seen by the
// benchmark's watch at At. No workload controller runs in apiserver mode, so
// a pod-template change is the rollout a reloader causes; a Deployment's
// generation is no measure, as it grows on metadata changes too.
type Rollout struct {
	Key string // namespace/name
	At  time.Time
	// RV is the object's resourceVersion in the event that showed the
	// change, the revision of the write that made it (see ParseRV); 0 when
	// it is not a number.
	RV uint64
	// Hash is the source digest a Reloader-style trigger names (the "hash"
	// of the pod template's reloader.stakater.com/last-reloaded-from,
	// which nudge writes for a workload Reloader's annotations select),
	// its first 8 characters, when the change rewrote a trigger; "" when
	// it did not (the floor's changes leave the annotation of an earlier
	// rollout in place) or there is none. Two rollouts of the same hash
	// rolled the same content of that source.
	Hash string
}

// lastReloadedFrom is Reloader's pod-template annotation naming the source
// of the last rollout, in Reloader's JSON shape
// (https://github.com/stakater/Reloader#reload-strategies); triggers are the
// pod-template annotations a rollout of Reloader's or nudge's rewrites.
const lastReloadedFrom = "reloader.stakater.com/last-reloaded-from"

var triggers = []string{lastReloadedFrom, "nudge.dev/restarted-at"}

// triggerHash returns the first 8 characters of the hash in the
// lastReloadedFrom annotation of now, the pod template's annotations after
// a change, when the change from before rewrote one of the triggers; ""
// otherwise.
func triggerHash(before, now map[string]string) string {
	rewrote := false
	for _, t := range triggers {
		rewrote = rewrote || now[t] != before[t]
	}
	var from struct {
		Hash string `json:"hash"`
	}
	if !rewrote || json.Unmarshal([]byte(now[lastReloadedFrom]), &from) != nil {
		return ""
	}
	return from.Hash[:min(len(from.Hash), 8)]
}

// Watcher watches every Deployment through an informer of the admin client
// and records each pod-template change, and the first time each Deployment
// carries the controller's baseline annotation.
type Watcher struct {
	baselineAnnotation string

	mu        sync.Mutex
	rollouts  []Rollout            // in the order seen
	byKey     map[string][]Rollout // rollouts of each Deployment
	baselined map[string]time.Time
	changed   chan struct{} // closed and replaced on every record
}

// Start starts the watch and returns once its cache has synced.
func Start(ctx context.Context, cs kubernetes.Interface, baselineAnnotation string) (*Watcher, error) {
	w := &Watcher{
		baselineAnnotation: baselineAnnotation,
		byKey:              map[string][]Rollout{},
		baselined:          map[string]time.Time{},
		changed:            make(chan struct{}),
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Apps().V1().Deployments().Informer()
	if err := inf.SetTransform(func(obj any) (any, error) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(nil, obj) },
		UpdateFunc: w.observe,
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("the Deployment watch did not sync")
	}
	return w, nil
}

func (w *Watcher) observe(oldObj, newObj any) {
	n, ok := newObj.(*appsv1.Deployment)
	if !ok {
		return
	}
	o, _ := oldObj.(*appsv1.Deployment)
	rolled := o != nil && !equality.Semantic.DeepEqual(o.Spec.Template, n.Spec.Template)
	hash := ""
	if rolled {
		hash = triggerHash(o.Spec.Template.Annotations, n.Spec.Template.Annotations)
	}
	w.record(n.Namespace+"/"+n.Name, n.ResourceVersion, hash, rolled, n.Annotations)
}

// WatchKind also watches the objects of gvr in namespace, through an
// informer of dyn, and records a change of the pod template at the field
// path template (spec.template; spec.jobTemplate.spec.template of a
// CronJob) as a rollout, under the key namespace/name as a Deployment's: the
// names of such objects must differ from the Deployments' of their
// namespace. It returns once the informer's cache has synced.
func (w *Watcher) WatchKind(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string, template []string) error {
	observe := func(oldObj, newObj any) {
		n, ok := newObj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		rolled := false
		if o, ok := oldObj.(*unstructured.Unstructured); ok {
			ot, _, _ := unstructured.NestedFieldNoCopy(o.Object, template...)
			nt, _, _ := unstructured.NestedFieldNoCopy(n.Object, template...)
			rolled = !equality.Semantic.DeepEqual(ot, nt)
		}
		w.record(n.GetNamespace()+"/"+n.GetName(), n.GetResourceVersion(), "", rolled, n.GetAnnotations())
	}
	return Namespace(ctx, dyn, gvr, namespace, observe)
}

// record notes, now, a rollout of key at resourceVersion, of the trigger
// hash, when rolled, and its first sight with the baseline annotation among
// annotations.
func (w *Watcher) record(key, resourceVersion, hash string, rolled bool, annotations map[string]string) {
	now := time.Now()
	rv, _ := ParseRV(resourceVersion) // 0 when not a number
	_, hasBaseline := annotations[w.baselineAnnotation]
	hasBaseline = hasBaseline && w.baselineAnnotation != ""
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.baselined[key]; hasBaseline && !seen {
		w.baselined[key] = now
	}
	if rolled {
		r := Rollout{Key: key, At: now, RV: rv, Hash: hash}
		w.rollouts = append(w.rollouts, r)
		w.byKey[key] = append(w.byKey[key], r)
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// firstAfter returns the first rollout of key after t; the caller holds mu.
func (w *Watcher) firstAfter(key string, t time.Time) (time.Time, bool) {
	for _, r := range w.byKey[key] {
		if r.At.After(t) {
			return r.At, true
		}
	}
	return time.Time{}, false
}

// WaitRolledAfter waits until every key of after has rolled at a
// resourceVersion above its value, or timeout; it returns the keys that did
// not, sorted.
func (w *Watcher) WaitRolledAfter(ctx context.Context, after map[string]uint64, timeout time.Duration) []string {
	var missing []string
	w.wait(ctx, timeout, func() bool {
		missing = missing[:0]
		for key, rv := range after {
			rs := w.byKey[key]
			if len(rs) == 0 || rs[len(rs)-1].RV <= rv {
				missing = append(missing, key)
			}
		}
		return len(missing) == 0
	})
	slices.Sort(missing)
	return missing
}

// RolloutsBetween returns every rollout seen after from and not after to.
func (w *Watcher) RolloutsBetween(from, to time.Time) []Rollout {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Rollout
	for _, r := range w.rollouts {
		if r.At.After(from) && !r.At.After(to) {
			out = append(out, r)
		}
	}
	return out
}

// WaitRolled waits until every key has rolled after since, or timeout. It
// returns the time of each key's first rollout after since, and the keys that
// did not roll in time.
func (w *Watcher) WaitRolled(ctx context.Context, keys []string, since time.Time, timeout time.Duration) (map[string]time.Time, []string) {
	pending := map[string]bool{}
	for _, k := range keys {
		pending[k] = true
	}
	rolled := map[string]time.Time{}
	w.wait(ctx, timeout, func() bool {
		for k := range pending {
			if at, ok := w.firstAfter(k, since); ok {
				rolled[k] = at
				delete(pending, k)
			}
		}
		return len(pending) == 0
	})
	var missing []string
	for _, k := range keys {
		if pending[k] {
			missing = append(missing, k)
		}
	}
	return rolled, missing
}

// WaitBaselined waits until n Deployments carry the baseline annotation, or
// timeout; it returns how many do and when the last of them was seen.
func (w *Watcher) WaitBaselined(ctx context.Context, n int, timeout time.Duration) (int, time.Time) {
	w.wait(ctx, timeout, func() bool { return len(w.baselined) >= n })
	return w.Baselined()
}

// WaitKeysBaselined waits until every key carries the baseline annotation,
// or timeout; it returns the keys that do not.
func (w *Watcher) WaitKeysBaselined(ctx context.Context, keys []string, timeout time.Duration) []string {
	var missing []string
	w.wait(ctx, timeout, func() bool {
		missing = missing[:0]
		for _, k := range keys {
			if _, ok := w.baselined[k]; !ok {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0
	})
	return missing
}

// BaselinedAt returns how many of keys carry the baseline annotation and
// when the last of those was first seen with it.
func (w *Watcher) BaselinedAt(keys []string) (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, last := 0, time.Time{}
	for _, k := range keys {
		if at, ok := w.baselined[k]; ok {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// Baselined returns how many Deployments carry the baseline annotation and
// when the last of them was first seen with it.
func (w *Watcher) Baselined() (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, at := range w.baselined {
		if at.After(last) {
			last = at
		}
	}
	return len(w.baselined), last
}

// wait calls done, with mu held, on every record until it returns true;
// it returns false when timeout passes or ctx ends first.
func (w *Watcher) wait(ctx context.Context, timeout time.Duration, done func() bool) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		ok := done()
		ch := w.changed
		w.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Namespace starts an informer of gvr in namespace that calls observe
// with each object updated (and with nil and each object added), and
// returns once its cache has synced.
func Namespace(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string, observe func(oldObj, newObj any)) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	inf := factory.ForResource(gvr).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(nil, obj) },
		UpdateFunc: observe,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the watch of %s did not sync", gvr.Resource)
	}
	return nil
}

// ParseRV returns resourceVersion as a number. The API calls it opaque, but
// a kube-apiserver on etcd (the benchmark's) gives the etcd revision of the
// write, one counter for the whole cluster: so it orders a source's write
// and a Deployment's rollout, whose wall-clock times seen by the benchmark
// may not (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions).
// It returns an error when resourceVersion is not a positive integer.
func ParseRV(resourceVersion string) (uint64, error) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil || rv == 0 {
		return 0, fmt.Errorf("resourceVersion %q is not an etcd revision", resourceVersion)
	}
	return rv, nil
}
