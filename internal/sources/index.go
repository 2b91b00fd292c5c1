package sources

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
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
func sourceKeys(k workload.Kind, autoReloadAll bool, d dialect.Parser) client.IndexerFunc {
	return func(obj client.Object) []string {
		tmpl := k.Template(obj)
		if tmpl == nil {
			return nil
		}
		spec, _ := d.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
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

// SourceOf returns the source a changed object stands for: a ConfigMap or
// Secret itself, the SecretProviderClass of a SecretProviderClassPodStatus;
// ok is false for any other object.
func SourceOf(obj client.Object) (src refs.Source, ok bool) {
	src = refs.Source{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	switch obj.(type) {
	case *corev1.ConfigMap:
		src.Kind = refs.ConfigMap
	case *corev1.Secret:
		src.Kind = refs.Secret
	default:
		s, ok := PodStatusOf(obj)
		if !ok || s.Class == "" {
			return refs.Source{}, false
		}
		src.Kind, src.Name = refs.SecretProviderClass, s.Class
	}
	return src, true
}

// Index looks up the source index of one workload kind: a request for every
// workload whose index keys include key.
type Index func(ctx context.Context, key string) ([]reconcile.Request, error)

// Workloads returns a request for every workload of the index's kind that
// may reference the source obj stands for (see SourceOf), reading only the
// index; none for an object that stands for no source. A lookup that fails
// is logged and skipped.
func (idx Index) Workloads(ctx context.Context, obj client.Object) []reconcile.Request {
	src, ok := SourceOf(obj)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, key := range []string{
		indexKey(src.Kind, src.Namespace, src.Name),
		indexKey(src.Kind, src.Namespace, anyName),
	} {
		found, err := idx(ctx, key)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to look workloads up in the index", "key", key)
			continue
		}
		reqs = append(reqs, found...)
	}
	return reqs
}

// Requests returns a request for every object of list.
func Requests(list client.ObjectList) []reconcile.Request {
	var reqs []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if m, ok := o.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		}
		return nil
	})
	return reqs
}

// indexer is what a single informer of controller-runtime's cache is (a
// client-go SharedIndexInformer); its per-namespace informers are not.
type indexer interface{ GetIndexer() toolscache.Indexer }

// NewIndex registers sourceIndex for kind k in mgr's cache. With one
// informer for the kind, the index is that informer's own and holds each key
// once, and a lookup reads only store keys; with one informer per namespace
// (--namespaces) it is a controller-runtime field index, which holds each key
// twice (per namespace and for all), and a lookup lists from the cache.
func NewIndex(ctx context.Context, mgr ctrl.Manager, k workload.Kind, autoReloadAll bool, d dialect.Parser) (Index, error) {
	keys := sourceKeys(k, autoReloadAll, d)
	inf, err := mgr.GetCache().GetInformer(ctx, k.New())
	if err != nil {
		return nil, err
	}
	if si, ok := inf.(indexer); ok {
		if err := inf.AddIndexers(toolscache.Indexers{sourceIndex: func(obj any) ([]string, error) {
			if o, ok := obj.(client.Object); ok {
				return keys(o), nil
			}
			return nil, nil
		}}); err != nil {
			return nil, err
		}
		return indexKeys(si.GetIndexer()), nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, k.New(), sourceIndex, keys); err != nil {
		return nil, err
	}
	c := mgr.GetClient()
	return func(ctx context.Context, key string) ([]reconcile.Request, error) {
		list := k.NewList()
		// Only names are read: no deep copy of every workload.
		if err := c.List(ctx, list, client.MatchingFields{sourceIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		return Requests(list), nil
	}, nil
}

// indexKeys looks sourceIndex up in idx by store key ("namespace/name"): no
// object is read or copied.
func indexKeys(idx toolscache.Indexer) Index {
	return func(_ context.Context, key string) ([]reconcile.Request, error) {
		ids, err := idx.IndexKeys(sourceIndex, key)
		if err != nil {
			return nil, err
		}
		reqs := make([]reconcile.Request, 0, len(ids))
		for _, id := range ids {
			ns, name, err := toolscache.SplitMetaNamespaceKey(id)
			if err != nil {
				return nil, err
			}
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
		return reqs, nil
	}
}
