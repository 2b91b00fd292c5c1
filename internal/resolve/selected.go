package resolve

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
)

// selectedCandidates returns the reference of each label selector of spec
// (dialect.Selected.Source), excluded sources left out of its set.
func selectedCandidates(spec dialect.Spec) []candidate {
	out := make([]candidate, 0, len(spec.Selectors))
	for _, s := range spec.Selectors {
		out = append(out, candidate{Reference: refs.Reference{Source: s.Source()}, selected: &s, excluded: spec.Excluded})
	}
	return out
}

// resolveSet resolves c, the reference of a label selector's set: Counted
// with its members (see resolveSelected), Unwatched in a namespace nudge
// does not watch, KindIgnored for a kind in --resources-to-ignore. It
// returns the Reader's error.
func (r Resolver) resolveSet(ctx context.Context, c candidate, in *rollout.Input) (Resolved, error) {
	res := Resolved{Reference: c.Reference, Outcome: Counted}
	switch {
	case !r.watched(ctx, c.Namespace):
		res.Outcome = Unwatched
	case r.IgnoreSources[c.selected.Kind]:
		res.Outcome = KindIgnored
	default:
		names, err := r.resolveSelected(ctx, c, in)
		if err != nil {
			return Resolved{}, err
		}
		res.Matched = names
	}
	return res, nil
}

// resolveSelected reads the set of sources c's label selector matches and
// records it in in as one entry: the keyed digest of every member's name
// and content (each member's own digest, fingerprint.Key.Source, under its
// name), so that a member created, changed or deleted, or labelled into or
// out of the set, changes it. An empty set has a digest too: its first
// member is a change. A member is a source of the selector's kind in the
// workload's namespace whose labels it matches, but for one excluded by the
// workload's annotations, one marked ignored, one outside
// --resource-label-selector, and a Helm release's Secret
// (sources.HelmReleaseType). The set's changes are the times of its
// members' and of its own (sources.Changes.Selected). It returns the
// members' names, sorted, or the Reader's error.
func (r Resolver) resolveSelected(ctx context.Context, c candidate, in *rollout.Input) ([]string, error) {
	sel := c.selected
	var list client.ObjectList = &corev1.ConfigMapList{}
	if sel.Kind == refs.Secret {
		list = &corev1.SecretList{}
	}
	if err := r.Reader.List(ctx, list, client.InNamespace(sel.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the %ss of %s for %s: %w", sel.Kind, sel.Namespace, c.Source, err)
	}
	d := fingerprint.Digests{}
	var names []string
	urgent := false
	err := apimeta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return nil
		}
		src := refs.Source{Kind: sel.Kind, Namespace: sel.Namespace, Name: obj.GetName()}
		if !r.member(c, src, obj) {
			return nil
		}
		names = append(names, src.Name)
		d[src.Name] = r.Key.Source(refs.Reference{Source: src}, sources.Digests(obj))
		urgent = urgent || dialect.Urgent(obj.GetAnnotations())
		in.Changes = append(in.Changes, r.Changes.Times(src, obj.GetResourceVersion(), in.Now)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	in.Desired.Entries[c.Source] = r.Key.Entry(c.Reference, d)
	in.Changes = append(in.Changes, r.Changes.Selected(sel.Kind, sel.Namespace, sel.Selector, in.Now)...)
	if urgent && !slices.Contains(in.Urgent, c.Source) {
		in.Urgent = append(in.Urgent, c.Source)
	}
	slices.Sort(names)
	return names, nil
}

// member reports whether obj, the source src, is in the set of c's label
// selector (see resolveSelected).
func (r Resolver) member(c candidate, src refs.Source, obj client.Object) bool {
	switch {
	case sources.HelmRelease(obj), !c.selected.Matches(src, sources.Labels(obj)), c.excluded != nil && c.excluded(src):
		return false
	case r.Dialect.Ignored(obj.GetAnnotations()):
		return false
	case r.SourceSelector != nil && !r.SourceSelector.Matches(labels.Set(obj.GetLabels())):
		return false
	}
	return true
}
