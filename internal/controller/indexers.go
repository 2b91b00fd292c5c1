package controller

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// sourceIndex is the field index from a source to the workloads that may
// reference it. Its keys are "Kind/namespace/name" for every source a
// workload's pod spec or annotations name, and "Kind/namespace/*" for a
// workload with a name pattern (Reloader's regular expressions) in that
// namespace.
const sourceIndex = "nudge.dev/source"

// anyName stands for every name in a pattern key; no object name contains it.
const anyName = "*"

func indexKey(kind refs.Kind, namespace, name string) string {
	return refs.Source{Kind: kind, Namespace: namespace, Name: name}.String()
}

// sourceKeys is the index func of sourceIndex for workloads of kind k. It
// over-approximates (every source of the pod spec, whatever the dialect's
// filters); the reconciler decides exactly. It returns nil for an object of
// another type or one no dialect opts in.
func sourceKeys(k workload.Kind, autoReloadAll bool) client.IndexerFunc {
	return func(obj client.Object) []string {
		tmpl := k.Template(obj)
		if tmpl == nil {
			return nil
		}
		spec, _ := dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
		if !spec.Enabled(autoReloadAll) {
			return nil
		}
		var keys []string
		for _, r := range refs.FromPodSpec(obj.GetNamespace(), &tmpl.Spec) {
			keys = append(keys, r.Source.String())
		}
		for _, n := range spec.Named {
			name := n.Name
			if n.Pattern != nil {
				name = anyName
			}
			keys = append(keys, indexKey(n.Kind, n.Namespace, name))
		}
		slices.Sort(keys)
		return slices.Compact(keys)
	}
}

// kindOf returns the source kind of a ConfigMap or Secret, "" otherwise.
func kindOf(obj client.Object) refs.Kind {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return refs.ConfigMap
	case *corev1.Secret:
		return refs.Secret
	}
	return ""
}

// workloadsIn maps a Namespace to a request for every workload of kind k in
// it, from the cache.
func (r *Reconciler) workloadsIn(ctx context.Context, ns client.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list workloads of a namespace from the cache", "kind", r.Kind.Name(), "namespace", ns.GetName())
		return nil
	}
	return requests(list)
}

// requests returns a request for every object of list.
func requests(list client.ObjectList) []reconcile.Request {
	var reqs []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if m, ok := o.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		}
		return nil
	})
	return reqs
}

// workloadsOf maps a source to a request for every workload of kind k that
// may reference it, reading only the cache's index.
func (r *Reconciler) workloadsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	kind := kindOf(obj)
	if kind == "" {
		return nil
	}
	var reqs []reconcile.Request
	for _, key := range []string{
		indexKey(kind, obj.GetNamespace(), obj.GetName()),
		indexKey(kind, obj.GetNamespace(), anyName),
	} {
		list := r.Kind.NewList()
		// Only names are read: no deep copy of every workload.
		if err := r.Client.List(ctx, list, client.MatchingFields{sourceIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to list workloads from the index", "kind", r.Kind.Name(), "key", key)
			continue
		}
		reqs = append(reqs, requests(list)...)
	}
	return reqs
}
