package resolve

import (
	"context"
	"fmt"
	"sync/atomic"

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
	// refused is true for a source named in another namespace while such
	// references are denied (dialect.Spec.Refused): it is never read.
	refused bool
	// selected is the label selector whose set of sources the reference
	// stands for (kind refs.ConfigMapSelector or refs.SecretSelector), nil
	// for any other; excluded are the sources the workload's annotations
	// exclude from it (dialect.Spec.Excluded).
	selected *dialect.Selected
	excluded func(refs.Source) bool
}

// Selector selects the references of a workload: the reconciler's, over its
// cache, and nudge explain's, over the API with the user's permissions.
type Selector struct {
	// Reader lists the sources a name pattern is matched against: the
	// cache, or the API.
	Reader client.Reader
	// AutoReloadAll is Reloader's --auto-reload-all: every workload is in
	// auto mode unless it opts out.
	AutoReloadAll bool
	// Watched reports whether nudge watches a namespace; nil means every one.
	Watched func(ctx context.Context, namespace string) bool
	// CSI, when not nil and true, says that nudge watches the Secrets Store
	// CSI driver's SecretProviderClassPodStatuses and that Reader serves
	// them; otherwise SecretProviderClasses count for nothing (CSIOff).
	CSI *atomic.Bool
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
// sources, merged (see refs.Merge), reading name patterns against the Reader,
// then the sets of its label selectors (dialect.Spec.Selectors), then the
// refused sources (dialect.Spec.Refused), once each, unread.
func (r Selector) references(ctx context.Context, namespace string, spec dialect.Spec, pod *corev1.PodSpec) ([]candidate, error) {
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
	out = append(out, selectedCandidates(spec)...)
	for i, n := range spec.Refused {
		src := refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}
		if i > 0 && spec.Refused[i-1].Kind == n.Kind && spec.Refused[i-1].Namespace == n.Namespace && spec.Refused[i-1].Name == n.Name {
			continue // named by another dialect too
		}
		out = append(out, candidate{Reference: refs.Reference{Source: src, Optional: true}, namedOnly: true, refused: true})
	}
	return out, nil
}

// sourceNames lists the names of the sources of kind in namespace.
func (r Selector) sourceNames(ctx context.Context, kind refs.Kind, namespace string) ([]string, error) {
	if kind == refs.SecretProviderClass {
		return r.classNames(ctx, namespace)
	}
	var list client.ObjectList = &corev1.ConfigMapList{}
	if kind == refs.Secret {
		list = &corev1.SecretList{}
	}
	if err := r.Reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss in %s: %w", kind, namespace, err)
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

func (r Selector) watched(ctx context.Context, namespace string) bool {
	return r.Watched == nil || r.Watched(ctx, namespace)
}
