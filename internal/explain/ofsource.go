package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/workload"
)

// Kinds are the workload kinds Source looks through, built-in then Argo
// Rollouts (skipped when not served).
func Kinds() []workload.Kind { return append(workload.Builtin(), workload.Rollout) }

// Source explains which workloads of the source's namespace would roll if
// the source of kind namespace/name changed, and why each does or does not.
// It lists every workload kind in the namespace with the user's permissions;
// a kind the API does not serve is skipped. Workloads of other namespaces
// that name it (nudge.dev/configmaps "namespace/name") are not looked at.
func (e Explainer) Source(ctx context.Context, kind refs.Kind, namespace, name string) (*Source, error) {
	src := refs.Source{Kind: kind, Namespace: namespace, Name: name}
	out := &Source{Kind: string(kind), Namespace: namespace, Name: name, Install: e.Install, Workloads: []Dependent{}}
	var srcObj client.Object = &corev1.ConfigMap{}
	if kind == refs.Secret {
		srcObj = &corev1.Secret{}
	}
	err := digested{e.Client, e.Dialect}.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, srcObj)
	switch {
	case err == nil:
		out.Exists = true
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	// Content is not compared: no key is needed.
	res := e.resolver(fingerprint.Key{})
	for _, k := range Kinds() {
		list := k.NewList()
		if err := e.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			if apimeta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s in %s: %w", k.Plural(), namespace, err)
		}
		var objs []client.Object
		if err := apimeta.EachListItem(list, func(o runtime.Object) error {
			if c, ok := o.(client.Object); ok {
				objs = append(objs, c)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for _, obj := range objs {
			d, ok, err := e.dependent(ctx, res, k, obj, src, out.Exists)
			if err != nil {
				return nil, err
			}
			if ok {
				out.Workloads = append(out.Workloads, d)
			}
		}
	}
	slices.SortStableFunc(out.Workloads, func(a, b Dependent) int {
		return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	})
	return out, nil
}

// dependent says whether a change of src rolls workload obj of kind k; ok is
// false when obj neither reads, names nor excludes src.
func (e Explainer) dependent(ctx context.Context, res resolve.Resolver, k workload.Kind, obj client.Object, src refs.Source, exists bool) (Dependent, bool, error) {
	tmpl, err := workload.TemplateOf(ctx, e.Client, k, obj)
	if tmpl == nil || err != nil {
		return Dependent{}, false, nil // a workloadRef nudge cannot read rolls nothing (see Workload)
	}
	spec, _ := e.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), tmpl.Annotations)
	uses := refs.Uses(obj.GetNamespace(), &tmpl.Spec)
	var read []refs.Reference
	for _, u := range uses {
		if u.Source == src {
			read = append(read, u.Reference)
		}
	}
	named := slices.ContainsFunc(spec.Named, func(n dialect.Named) bool { return n.Matches(src) })
	excluded := spec.Excluded(src)
	selects := slices.ContainsFunc(spec.Selectors, func(s dialect.Selected) bool { return s.Kind == src.Kind && s.Namespace == src.Namespace })
	if len(read) == 0 && !named && !excluded && !selects {
		return Dependent{}, false, nil
	}
	d := Dependent{Kind: k.Name(), Name: obj.GetName()}
	if merged := refs.Merge(read); len(merged) == 1 {
		d.Keys = merged[0].Keys
	}
	in, resolved, err := res.Inputs(ctx, obj, spec, tmpl, e.now())
	if err != nil {
		return Dependent{}, false, fmt.Errorf("resolving the references of %s %s/%s: %w", k.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	i := slices.IndexFunc(resolved, func(r resolve.Resolved) bool { return r.Source == src })
	if i < 0 {
		if set, ok := inSet(resolved, src); ok {
			d.ReadAs, d.WouldRoll, d.Why = []string{"selector"}, true, "yes: its label selector "+set.Name+" matches it"
			return d, true, nil
		}
		if len(read) == 0 && !named && !excluded {
			return Dependent{}, false, nil // its selectors match other sources
		}
		d.ReadAs = readAs(src, false, uses, spec)
		d.Why = notSelected(spec, e.AutoReloadAll, excluded)
		return d, true, nil
	}
	r := resolved[i]
	d.Keys = r.Keys
	d.ReadAs = readAs(src, r.NeedsMatch, uses, spec)
	d.WouldRoll, d.Why = why(r, exists)
	if d.WouldRoll && len(in.Missing) > 0 {
		var missing []string
		for _, m := range in.Missing {
			missing = append(missing, sourceName(m.Source))
		}
		d.Why += "; held until the required " + strings.Join(missing, ", ") + " exists"
	}
	if d.WouldRoll {
		d.Why += heldByPause(ctx, res, obj, spec, src, in)
	}
	if by := ownership.WrittenBackBy(obj.GetManagedFields()); d.WouldRoll && by != "" && in.Applied != "" {
		// Restored (see Workload): the key, not read here, would tell a
		// sealed state from one nudge takes over as a first sight; neither
		// rolls for this change.
		d.WouldRoll = false
		d.Why = "not now: its applied state was written back by " + by + " (see nudge explain " + strings.ToLower(k.Name()) + "/" +
			obj.GetName() + "); nudge rolls it for no change until the nudge.dev/ keys are removed from that manifest"
	}
	if k == workload.Job {
		d.Why += "; a Job rolls (is re-created) only when nudge runs with --recreate-jobs"
	}
	return d, true, nil
}

// inSet returns the label selector's set of resolved that src is in.
func inSet(resolved []resolve.Resolved, src refs.Source) (resolve.Resolved, bool) {
	for _, r := range resolved {
		if kind, ok := r.Kind.Selects(); ok && kind == src.Kind && r.Namespace == src.Namespace && slices.Contains(r.Matched, src.Name) {
			return r, true
		}
	}
	return resolve.Resolved{}, false
}

// notSelected says why a workload that reads, names or excludes a source does
// not select it.
func notSelected(spec dialect.Spec, autoReloadAll, excluded bool) string {
	if excluded {
		return "no: an exclude annotation names it"
	}
	if !spec.Enabled(autoReloadAll) {
		return "no: the workload reads it but no dialect annotation opts it in (e.g. nudge.dev/auto: \"true\")"
	}
	return "no: the workload's annotations select other sources or kinds, not this one"
}

// why says whether a change of a selected source rolls the workload.
func why(r resolve.Resolved, exists bool) (bool, string) {
	switch r.Outcome {
	case resolve.Counted:
		if r.NeedsMatch {
			return true, "yes: search mode, and the source carries " + dialect.ReloaderMatch
		}
		if r.NamedOnly {
			return true, "yes: an annotation names it"
		}
		return true, "yes: it reads it and its annotations select it"
	case resolve.AbsentOptional:
		return true, "yes: it is optional and missing; its creation rolls the workload"
	case resolve.Missing:
		return false, "not now: it is required and missing; nudge holds other changes until it exists, then rolls if its content is new"
	case resolve.Kept:
		return false, "not now: an annotation names it but it does not exist; when created with content other than before, it rolls"
	case resolve.Refused:
		return false, "no: it is in another namespace, and nudge refuses such references (--cross-namespace-references=deny)"
	case resolve.Ignored:
		return false, "no: the source carries " + dialect.NudgeIgnore + " or " + dialect.ReloaderIgnore
	case resolve.Unmatched:
		if !exists {
			return false, "no: search mode, and the source does not exist"
		}
		return false, "no: search mode, and the source does not carry " + dialect.ReloaderMatch + ": \"true\""
	}
	return false, "no: " + string(r.Outcome)
}
