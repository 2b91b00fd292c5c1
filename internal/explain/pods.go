package explain

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// errNoSelector is returned for a workload whose pods cannot be found by a
// label selector.
var errNoSelector = errors.New("no selector")

// rotation returns which pods of obj, of kind k, started before the sources
// its pod spec reads frozen last changed; nil when it reads none frozen. A
// LIST of pods or a read of a source the user may not do is said in the
// result, not returned as an error.
func (e Explainer) rotation(ctx context.Context, k workload.Kind, obj client.Object, spec *corev1.PodSpec) (*Rotation, error) {
	srcs, how := frozenSources(refs.Uses(obj.GetNamespace(), spec))
	if len(srcs) == 0 {
		return nil, nil
	}
	r := &Rotation{Sources: []Stale{}}
	pods, err := e.pods(ctx, k, obj)
	switch {
	case errors.Is(err, errNoSelector):
		r.Unread = fmt.Sprintf("pods not looked at: a %s has no selector to find them by", k.Name())
		return r, nil
	case unreadable(err):
		r.Unread, r.denied = fmt.Sprintf("pods not looked at: you may not list pods in %s (%v)", obj.GetNamespace(), err), true
		return r, nil
	case err != nil:
		return nil, err
	}
	pods = Running(pods)
	r.Pods = len(pods)
	for _, src := range srcs {
		st := Stale{Source: sourceName(src), ReadAs: how[src], Before: []string{}}
		changed, evidence, err := e.changedAt(ctx, src)
		switch {
		case apierrors.IsNotFound(err):
			st.Message = st.Source + " does not exist"
		case unreadable(err):
			st.Message = fmt.Sprintf("cannot tell when %s changed: you may not read it (%v)", st.Source, err)
		case err != nil:
			return nil, err
		default:
			st.Changed, st.Evidence = &changed, evidence
			st.Before = append(st.Before, Before(pods, changed)...)
			st.Count = len(st.Before)
			st.Message = staleMessage(st.Source, changed, st.Before, len(pods))
		}
		r.Sources = append(r.Sources, st)
	}
	return r, nil
}

// changedAt reads src's metadata only (no value is read) and returns
// ChangedAt of it.
func (e Explainer) changedAt(ctx context.Context, src refs.Source) (at time.Time, evidence string, err error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(src.Kind)))
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: src.Namespace, Name: src.Name}, meta); err != nil {
		return at, "", err
	}
	at, evidence = ChangedAt(meta)
	return at, evidence, nil
}

// pods lists the pods of obj in its namespace: by its spec.selector, or, for
// a CronJob, by the job-name label of the Jobs it owns. It returns
// errNoSelector for a kind without either.
func (e Explainer) pods(ctx context.Context, k workload.Kind, obj client.Object) ([]corev1.Pod, error) {
	sel, err := e.selector(ctx, k, obj)
	if err != nil || sel == nil {
		return nil, err
	}
	var list corev1.PodList
	if err := e.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the pods of %s %s/%s: %w", k.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return list.Items, nil
}

// selector returns the label selector of obj's pods.
func (e Explainer) selector(ctx context.Context, k workload.Kind, obj client.Object) (labels.Selector, error) {
	if k == workload.CronJob {
		return e.cronJobSelector(ctx, obj)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m, found, err := unstructured.NestedMap(u, "spec", "selector")
	if err != nil || !found {
		return nil, errNoSelector
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoSelector, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return nil, errNoSelector
	}
	return sel, nil
}

// cronJobSelector selects the pods of the Jobs the CronJob owns, by their
// batch.kubernetes.io/job-name label; nil when it owns none.
func (e Explainer) cronJobSelector(ctx context.Context, obj client.Object) (labels.Selector, error) {
	var jobs batchv1.JobList
	if err := e.Client.List(ctx, &jobs, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, fmt.Errorf("listing the Jobs of CronJob %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	var names []string
	for _, j := range jobs.Items {
		if o := metav1.GetControllerOf(&j); o != nil && o.UID == obj.GetUID() {
			names = append(names, j.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	req, err := labels.NewRequirement(batchv1.JobNameLabel, selection.In, names)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*req), nil
}

// lagging adds to the fleet's Lagging workload obj, named name, for each
// source its pods read frozen that changed more than --rollout-timeout
// before now and that some of its pods started before. Pods the user may
// not list are said in Fleet.Unread.
func (e Explainer) lagging(ctx context.Context, f *Fleet, k workload.Kind, obj client.Object, name string, spec *corev1.PodSpec, now time.Time) error {
	r, err := e.rotation(ctx, k, obj, spec)
	if err != nil || r == nil {
		return err
	}
	if r.denied {
		f.Unread = append(f.Unread, name+": "+r.Unread)
	}
	for _, s := range r.Sources {
		if s.Count == 0 || s.Changed == nil || now.Sub(*s.Changed) <= e.RolloutTimeout {
			continue
		}
		f.Lagging = append(f.Lagging, Lagging{Workload: name, Source: s.Source, Changed: *s.Changed,
			Before: s.Before, Count: s.Count, Pods: r.Pods, Message: s.Message})
	}
	return nil
}
