package sources

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// referrers is the part of an Index that keeps the workloads taking their
// pod template from another workload (workload.Referrer: an Argo Rollout
// with a spec.workloadRef). Their keys depend on the other workload, so
// they cannot be computed again from the old object of their own update:
// the keys each was indexed under are kept.
type referrers struct {
	kind   workload.Kind
	reader client.Reader
	// mu orders the updates of referrers, each of which reads the cache
	// then moves keys: an update that read later moves later.
	mu      sync.Mutex
	indexed map[types.NamespacedName][]refs.Source
}

// refReadTimeout bounds a read of the cache by the index: a read that
// fails leaves the referenced workload's keys out until its own event.
const refReadTimeout = 10 * time.Second

// refKey is the index key of the workload ref refers to.
func refKey(ref workload.Ref) refs.Source {
	return refs.Source{Kind: refs.Kind(ref.Kind), Namespace: ref.Namespace, Name: ref.Name}
}

// refers reports whether obj, of the index's kind, takes its pod template
// from another workload.
func (x *Index) refers(obj client.Object) bool {
	if obj == nil {
		return false
	}
	_, ok := workload.RefOf(x.kind, obj)
	return ok
}

// template returns obj's pod template; for a referrer, that of the workload
// it refers to as the cache holds it, nil when it cannot be read.
func (x *Index) template(obj client.Object) *corev1.PodTemplateSpec {
	if !x.refers(obj) {
		return x.kind.Template(obj)
	}
	if x.reader == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), refReadTimeout)
	defer cancel()
	tmpl, err := workload.TemplateOf(ctx, x.reader, x.kind, obj)
	if err != nil {
		return nil
	}
	return tmpl
}

// updateReferrer is update for a workload that is (old or new) a referrer.
func (x *Index) updateReferrer(old, new client.Object) bool {
	x.referrers.mu.Lock()
	defer x.referrers.mu.Unlock()
	var name types.NamespacedName
	var was, is []refs.Source
	if old != nil {
		name = client.ObjectKeyFromObject(old)
		var kept bool
		if was, kept = x.indexed[name]; !kept {
			was = x.keys(old)
		}
	}
	if new != nil {
		name, is = client.ObjectKeyFromObject(new), x.keys(new)
	}
	x.keep(name, is, x.refers(new))
	return x.move(name, was, is)
}

// keep records the keys a referrer is indexed under; a workload that is no
// referrer (any more) is forgotten.
func (x *Index) keep(name types.NamespacedName, keys []refs.Source, referrer bool) {
	if !referrer {
		delete(x.indexed, name)
		return
	}
	if x.indexed == nil {
		x.indexed = map[types.NamespacedName][]refs.Source{}
	}
	x.indexed[name] = keys
}

// Referrers returns a request for every workload of the index's kind that
// takes its pod template from the Deployment obj (see workload.Referrer);
// none for another object.
func (x *Index) Referrers(_ context.Context, obj client.Object) []reconcile.Request {
	if _, ok := obj.(*appsv1.Deployment); !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, n := range x.lookup(refs.Source{Kind: "Deployment", Namespace: obj.GetNamespace(), Name: obj.GetName()}) {
		reqs = append(reqs, reconcile.Request{NamespacedName: n})
	}
	return reqs
}

// ReferrerTracker returns the predicate of the watch of Deployments for an
// index of a workload.Referrer kind (Argo Rollouts): for each workload
// that takes its pod template from a Deployment created, updated or
// deleted, it reads the workload again from the cache and moves it to the
// keys the Deployment's pod template gives it now, so that a change of a
// source the Deployment's pods read finds it (see Workloads). It is true
// (the workloads are reconciled) for a create or a delete, and for an
// update that changed the Deployment's generation (its pod template) or the
// workloads' keys; never for a Deployment no workload refers to.
func (x *Index) ReferrerTracker() predicate.Funcs {
	reindex := func(dep client.Object) bool {
		changed := false
		for _, req := range x.Referrers(context.Background(), dep) {
			changed = x.reindex(req.NamespacedName) || changed
		}
		return changed
	}
	referred := func(dep client.Object) bool { return len(x.Referrers(context.Background(), dep)) > 0 }
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return reindex(e.Object) || referred(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return reindex(e.ObjectNew) || (referred(e.ObjectNew) && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration())
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { return reindex(e.Object) || referred(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// reindex reads the referrer name from the cache and moves it to its keys
// now, and reports whether they changed; one the cache has no more is
// dropped, and one that cannot be read is left as it is.
func (x *Index) reindex(name types.NamespacedName) bool {
	if x.reader == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), refReadTimeout)
	defer cancel()
	obj := x.kind.New()
	err := x.reader.Get(ctx, name, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return false
	}
	x.referrers.mu.Lock()
	defer x.referrers.mu.Unlock()
	var is []refs.Source
	if err == nil {
		is = x.keys(obj)
	}
	was := x.indexed[name]
	x.keep(name, is, err == nil && x.refers(obj))
	return x.move(name, was, is)
}
