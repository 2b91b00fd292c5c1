package sources

import (
	"context"
	"slices"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// anyName stands for every name in a pattern key; no object name contains it.
const anyName = "*"

// Index maps a source to the workloads of one kind that may reference it:
// every source a workload's pod spec or annotations name, for a
// workload with a name pattern (Reloader's regular expressions) its kind
// and namespace with the name anyName, and for a workload with a label
// selector (dialect.Selected) the set's own source (refs.ConfigMapSelector
// or refs.SecretSelector, the selector as its name), which a source's event
// finds when the selector matches its labels. It over-approximates (every source of
// the pod spec, whatever the dialect's filters); the reconciler decides
// exactly. A workload no dialect opts in has no keys.
//
// It is nudge's own rather than an index of the informer's store: client-go
// keeps a set (a Go map) per indexed value and a key string per value, about
// 1.1 KiB for a workload reading four sources, where this keeps a slice of
// workload names per source, about 0.5 KiB. It is updated by Tracker, the
// first predicate of the kind's own watch: see Tracker for why that order
// loses no change. Safe for concurrent use.
type Index struct {
	keys func(client.Object) []refs.Source
	mu   sync.RWMutex
	of   map[refs.Source][]types.NamespacedName
	// selectors holds, per selector kind and namespace (a Source without a
	// name), the label selectors indexed there, parsed once.
	selectors map[refs.Source]map[string]labels.Selector
	// The workloads that take their pod template from another (see
	// Referrers).
	referrers
}

// NewIndex returns an empty index of workloads of kind k; keys are read with
// d, and with autoReloadAll every workload is opted in. reader (nudge's
// cache) reads the pod template of a workload that takes it from another
// (workload.Referrer); with a nil reader such a workload has the keys of
// its annotations alone.
func NewIndex(k workload.Kind, autoReloadAll bool, d dialect.Parser, reader client.Reader) *Index {
	x := &Index{of: map[refs.Source][]types.NamespacedName{}, referrers: referrers{kind: k, reader: reader},
		selectors: map[refs.Source]map[string]labels.Selector{}}
	x.keys = sourceKeys(k, autoReloadAll, d, x.template)
	return x
}

// sourceKeys returns the index keys of a workload of kind k, sorted, each
// namespace a shared copy (unique.Make), its pod template read by template.
// It returns nil for an object of another type or one no dialect opts in;
// a workload that takes its pod template from another is keyed under that
// workload too (see Referrers), opted in or not.
func sourceKeys(k workload.Kind, autoReloadAll bool, d dialect.Parser, template func(client.Object) *corev1.PodTemplateSpec) func(client.Object) []refs.Source {
	return func(obj client.Object) []refs.Source {
		var keys []refs.Source
		ref, isRef := workload.RefOf(k, obj)
		if isRef {
			keys = append(keys, refKey(ref))
		}
		tmpl := template(obj)
		if tmpl == nil && isRef {
			tmpl = &corev1.PodTemplateSpec{} // the referenced workload's is unknown: the annotations' sources still count
		}
		if tmpl == nil {
			return nil
		}
		spec, _ := d.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
		if !spec.Enabled(autoReloadAll) {
			return keys
		}
		for _, r := range refs.FromPodSpec(obj.GetNamespace(), &tmpl.Spec) {
			keys = append(keys, r.Source)
		}
		for _, n := range spec.Named {
			name := n.Name
			if n.Pattern != nil {
				name = anyName
			}
			keys = append(keys, refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: name})
		}
		for _, sel := range spec.Selectors {
			keys = append(keys, sel.Source())
		}
		for i := range keys {
			keys[i].Namespace = unique.Make(keys[i].Namespace).Value()
		}
		slices.SortFunc(keys, refs.Source.Compare)
		return slices.Compact(keys)
	}
}

// Tracker returns the predicate that keeps the index in step with the
// workloads' own watch: it indexes a created workload, re-indexes an updated
// one and drops a deleted one, and it is true (the workload is reconciled)
// whenever the workload's keys changed, false otherwise. Put it first among
// the kind's predicates (predicate.Or(Tracker(), …)), after those that pass
// every event, so that it sees every event, in order.
//
// The index then lags the informer's store: a workload that starts reading
// a source is in the store before the index knows it, and a change of the
// source in between does not find it. It loses no change: the workload's own
// event, which re-indexed it, enqueues it afterwards, and its reconcile reads
// the source's change from the cache, which had it before the lookup. A
// workload that stops reading a source is still found until its event is
// handled; the reconcile then finds nothing to roll.
func (x *Index) Tracker() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return x.update(nil, e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return x.update(e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			x.update(e.Object, nil)
			return true
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// update moves a workload from old's keys to new's (either may be nil) and
// reports whether they differ.
func (x *Index) update(old, new client.Object) bool {
	if x.refers(old) || x.refers(new) {
		return x.updateReferrer(old, new)
	}
	var was, is []refs.Source
	var name types.NamespacedName
	if old != nil {
		was, name = x.keys(old), client.ObjectKeyFromObject(old)
	}
	if new != nil {
		is, name = x.keys(new), client.ObjectKeyFromObject(new)
	}
	return x.move(name, was, is)
}

// move moves the workload name from the keys was to the keys is, and
// reports whether they differ.
func (x *Index) move(name types.NamespacedName, was, is []refs.Source) bool {
	if slices.Equal(was, is) {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, k := range was {
		if !slices.Contains(is, k) {
			x.remove(k, name)
		}
	}
	for _, k := range is {
		if !slices.Contains(was, k) && !slices.Contains(x.of[k], name) {
			x.of[k] = append(x.of[k], name)
			x.addSelector(k)
		}
	}
	return true
}

func (x *Index) remove(k refs.Source, name types.NamespacedName) {
	names := slices.DeleteFunc(x.of[k], func(n types.NamespacedName) bool { return n == name })
	if len(names) == 0 {
		delete(x.of, k)
		x.removeSelector(k)
		return
	}
	x.of[k] = slices.Clip(names)
}

// addSelector records k when it is a label selector's key (see
// dialect.Selected.Source), under its kind and namespace.
func (x *Index) addSelector(k refs.Source) {
	if _, ok := k.Kind.Selects(); !ok {
		return
	}
	space := refs.Source{Kind: k.Kind, Namespace: k.Namespace}
	if _, ok := x.selectors[space][k.Name]; ok {
		return
	}
	sel, err := labels.Parse(k.Name) // canonical, as dialect.ParseSelector made it
	if err != nil {
		return
	}
	if x.selectors[space] == nil {
		x.selectors[space] = map[string]labels.Selector{}
	}
	x.selectors[space][k.Name] = sel
}

// removeSelector forgets k, a key no workload has any more.
func (x *Index) removeSelector(k refs.Source) {
	space := refs.Source{Kind: k.Kind, Namespace: k.Namespace}
	if sels, ok := x.selectors[space]; ok {
		delete(sels, k.Name)
		if len(sels) == 0 {
			delete(x.selectors, space)
		}
	}
}

// selected returns the keys of the label selectors of obj's kind and
// namespace that match obj's labels (see Labels); none for a source of
// another kind, a Helm release's Secret (see HelmReleaseType), or any other
// object.
func (x *Index) selected(obj client.Object) []refs.Source {
	src, ok := SourceOf(obj)
	if !ok || HelmRelease(obj) {
		return nil
	}
	kind, ok := refs.SelectorOf(src.Kind)
	if !ok {
		return nil
	}
	space := refs.Source{Kind: kind, Namespace: src.Namespace}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.selectors[space]) == 0 {
		return nil
	}
	l := Labels(obj)
	var keys []refs.Source
	for text, sel := range x.selectors[space] {
		if sel.Matches(l) {
			keys = append(keys, refs.Source{Kind: kind, Namespace: src.Namespace, Name: text})
		}
	}
	return keys
}

// Changed is the filter of the source events that may change what the
// index's workloads read: the package's Changed (content, marks, creations,
// deletions) or Relabeled (a source labelled into or out of a set).
func (x *Index) Changed(d dialect.Parser) predicate.Predicate {
	return predicate.Or[client.Object](Changed(d), x.Relabeled())
}

// Relabeled passes the updates of a source whose labels changed while a
// label selector of its namespace matches its old or its new labels: it
// left or joined that selector's set, a change for the workloads of the
// selector (see Workloads), though no content changed. Other events it
// does not pass: Index.Changed adds it to Changed.
func (x *Index) Relabeled() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil || SameLabels(e.ObjectOld, e.ObjectNew) {
				return false
			}
			return len(x.selected(e.ObjectOld)) > 0 || len(x.selected(e.ObjectNew)) > 0
		},
	}
}

// lookup returns the workloads indexed under k, a copy.
func (x *Index) lookup(k refs.Source) []types.NamespacedName {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.of[k])
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
		s, ok := csi.PodStatusOf(obj)
		if !ok || s.Class == "" {
			return refs.Source{}, false
		}
		src.Kind, src.Name = refs.SecretProviderClass, s.Class
	}
	return src, true
}

// Workloads returns a request for every workload of the index's kind that
// may reference the source obj stands for (see SourceOf): those indexed
// under its name, under a pattern of its kind and namespace, and under a
// label selector of its kind and namespace that matches obj's labels. An
// update's handler asks for its old and its new object both, so a source
// labelled out of a selector finds that selector's workloads too. It
// returns none for an object that stands for no source.
func (x *Index) Workloads(_ context.Context, obj client.Object) []reconcile.Request {
	src, ok := SourceOf(obj)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, n := range x.lookup(src) {
		reqs = append(reqs, reconcile.Request{NamespacedName: n})
	}
	src.Name = anyName
	for _, n := range x.lookup(src) {
		reqs = append(reqs, reconcile.Request{NamespacedName: n})
	}
	for _, k := range x.selected(obj) {
		for _, n := range x.lookup(k) {
			reqs = append(reqs, reconcile.Request{NamespacedName: n})
		}
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
