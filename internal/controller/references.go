package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/refs"
)

// candidate is a reference the workload's dialects select, before the source
// itself is read.
type candidate struct {
	refs.Reference
	// needsMatch is true when only Reloader's search mode selects the source:
	// it then counts only if it carries reloader.stakater.com/match.
	needsMatch bool
	// namedOnly is true when an annotation names the source and the pod spec
	// does not read it: its pods start without it, so, as in Reloader, its
	// deletion rolls nothing (see rollout.Input.Kept).
	namedOnly bool
}

// namedReference is the reference an annotation's name makes to src: the
// whole object, optional as the pod spec reads it. A source the pod spec
// reads as required is required even when only an annotation selects it, so
// its deletion holds the workload (rule 5) instead of rolling it into pods
// that cannot start; one the pod spec does not read is optional (and kept:
// see candidate.namedOnly).
func namedReference(src refs.Source, inPod map[refs.Source]refs.Reference) refs.Reference {
	optional := true
	if ref, ok := inPod[src]; ok {
		optional = ref.Optional
	}
	return refs.Reference{Source: src, Optional: optional}
}

// references returns what spec selects of the pod spec and the named
// sources, merged (see refs.Merge), reading name patterns against the cache.
func (r *Reconciler) references(ctx context.Context, namespace string, spec dialect.Spec, pod *corev1.PodSpec) ([]candidate, error) {
	var all []refs.Reference
	searchOnly := map[refs.Source]bool{}
	inPod := map[refs.Source]refs.Reference{}
	for _, ref := range refs.FromPodSpec(namespace, pod) {
		inPod[ref.Source] = ref
		sel := spec.For(ref.Kind)
		auto := sel.Automatic(r.AutoReloadAll)
		if (!auto && !sel.Search) || spec.Excluded(ref.Source) {
			continue
		}
		all = append(all, ref)
		only, seen := searchOnly[ref.Source]
		searchOnly[ref.Source] = !auto && (only || !seen)
	}
	for _, n := range spec.Named {
		if n.Pattern == nil {
			src := refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}
			if spec.Excluded(src) {
				continue
			}
			all = append(all, namedReference(src, inPod))
			searchOnly[src] = false
			continue
		}
		if !r.watched(ctx, n.Namespace) {
			continue
		}
		names, err := r.sourceNames(ctx, n.Kind, n.Namespace)
		if err != nil {
			return nil, err
		}
		// A source the pod spec reads is matched whether or not it exists
		// now: deleted, it stays a reference, so it holds the workload and
		// its return with other content rolls (rule 5), instead of leaving
		// the references and coming back as a new one (a baseline).
		for src := range inPod {
			if src.Kind == n.Kind && src.Namespace == n.Namespace {
				names = append(names, src.Name)
			}
		}
		for _, name := range names {
			src := refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: name}
			if n.Matches(src) && !spec.Excluded(src) {
				all = append(all, namedReference(src, inPod))
				searchOnly[src] = false
			}
		}
	}
	merged := refs.Merge(all)
	out := make([]candidate, len(merged))
	for i, ref := range merged {
		_, read := inPod[ref.Source]
		out[i] = candidate{Reference: ref, needsMatch: searchOnly[ref.Source], namedOnly: !read}
	}
	return out, nil
}

// sourceNames lists the names of the cached sources of kind in namespace.
func (r *Reconciler) sourceNames(ctx context.Context, kind refs.Kind, namespace string) ([]string, error) {
	var list client.ObjectList = &corev1.ConfigMapList{}
	if kind == refs.Secret {
		list = &corev1.SecretList{}
	}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing cached %ss in %s: %w", kind, namespace, err)
	}
	var names []string
	err := apimeta.EachListItem(list, func(o runtime.Object) error {
		if m, ok := o.(client.Object); ok {
			names = append(names, m.GetName())
		}
		return nil
	})
	return names, err
}
