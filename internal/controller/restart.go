package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/workload"
)

// Evicting lets a rollout restart, through the Eviction API, the pods its
// template change cannot reach (--enable-eviction; package eviction).
type Evicting struct {
	// Kinds are the workload kinds restarted without the annotation
	// (--evict-pods-of).
	Kinds []schema.GroupKind
	// Timeout is how long a replacement may take to be Ready
	// (--rollout-timeout); 0 for no limit.
	Timeout time.Duration
	// backoff spaces the evictions a PodDisruptionBudget refused.
	backoff eviction.Backoff
}

// evicts reports whether a workload of r's kind restarts its pods by
// eviction: with --enable-eviction, when it asks (evict, its
// nudge.dev/rollout-strategy) or its kind is one of --evict-pods-of.
func (r *Reconciler) evicts(evict bool) bool {
	if r.Evicting == nil {
		return false
	}
	if evict {
		return true
	}
	gvk, err := r.Client.GroupVersionKindFor(r.Kind.New())
	return err == nil && slices.Contains(r.Evicting.Kinds, gvk.GroupKind())
}

// restart observes, for o's decision, the restart of its pods through the
// Eviction API: whether a rollout starts one (rollout.Input.Evicts) and,
// while one is under way and not halted (eviction.ProgressAnnotation), the
// workload as the API server holds it and its pods, by one GET and one
// LIST of its selector in its namespace (rollout.Input.Restart). It returns
// the Warning causes found (the annotation without --enable-eviction, a
// progress that does not read) and the API server's error.
func (r *Reconciler) restart(ctx context.Context, o *observed) ([]record.Cause, error) {
	o.in.Evicts = r.evicts(o.spec.Evict)
	if o.spec.Evict && r.Evicting == nil {
		return []record.Cause{{Reason: record.ReasonEvictionOff, Note: fmt.Sprintf(
			"%s \"evict\" needs nudge's --enable-eviction (chart value eviction.enabled): only the pod template is changed", "nudge.dev/rollout-strategy")}}, nil
	}
	v, found := o.obj.GetAnnotations()[eviction.ProgressAnnotation]
	if !found || !o.in.Evicts {
		r.Metrics.Restart(r.restartKey(o), false)
		return nil, nil
	}
	p, err := eviction.ParseProgress(v)
	if err != nil {
		r.Metrics.Restart(r.restartKey(o), false)
		return []record.Cause{{Reason: record.ReasonMalformedAnnotation, Note: fmt.Sprintf(
			"annotation %s: %v; no pod is evicted until the next rollout (or remove it)", eviction.ProgressAnnotation, err)}}, nil
	}
	timeout := r.Evicting.Timeout
	r.Metrics.Restart(r.restartKey(o), p.Halted || (timeout > 0 && o.in.Now.Sub(p.Since) > timeout))
	if p.Halted {
		return nil, nil
	}
	live := r.Kind.New()
	if err := r.APIReader.Get(ctx, o.key, live); err != nil {
		return nil, fmt.Errorf("reading the workload whose pods are restarted: %w", err)
	}
	owner, err := eviction.OwnerOf(live)
	if err != nil {
		return []record.Cause{{Reason: record.ReasonMalformedAnnotation, Note: err.Error() + "; no pod is evicted"}}, nil
	}
	pods, err := eviction.PodsOf(ctx, r.APIReader, o.key.Namespace, owner.Selector, live.GetUID())
	if err != nil {
		return nil, err
	}
	o.in.Restart = &eviction.Input{Pods: pods, Progress: p, Want: owner.Want, MaxUnavailable: o.spec.MaxUnavailable,
		Now: o.in.Now, Unobserved: !owner.Observed, Timeout: timeout}
	return nil, nil
}

// restartKey is the key of o's workload in nudge_unfinished_restarts.
func (r *Reconciler) restartKey(o *observed) string {
	return r.Kind.Name() + "/" + o.key.String()
}

// evict carries out d, an Evict decided on o's inputs: the pods its plan
// names evicted, one after another, and the progress written; a refusal by
// a PodDisruptionBudget named in a Warning and in the progress, and tried
// again with backoff; a halt written and warned about; the progress
// removed once done. It returns the API server's error.
func (r *Reconciler) evict(ctx context.Context, o *observed, d rollout.Decision) (ctrl.Result, error) {
	in, plan := o.in.Restart, d.Restart
	p := in.Progress
	log := ctrl.LoggerFrom(ctx)
	switch plan.Step {
	case eviction.Wait:
		return ctrl.Result{RequeueAfter: plan.After}, nil
	case eviction.Done:
		r.Evicting.backoff.Reset(o.key.String())
		r.Metrics.Restart(r.restartKey(o), false)
		log.Info("Restarted the pods of "+r.Kind.Name(), "kind", r.Kind.Name(), "since", p.Since)
		return ctrl.Result{}, r.progress(ctx, o.obj, nil)
	case eviction.Stuck:
		p.Halted = true
		if err := r.progress(ctx, o.obj, &p); err != nil {
			return ctrl.Result{}, err
		}
		r.Metrics.Restart(r.restartKey(o), true)
		r.warn(ctx, o.obj, []record.Cause{{Reason: record.ReasonRestartHalted, Note: fmt.Sprintf(
			"Halted the restart of the pods that started before %s: a replacement was not Ready within %s (--rollout-timeout) after the last eviction; %d pod(s) still predate the change. The next change starts it again",
			p.Since.UTC().Format(time.RFC3339), in.Timeout, plan.Old)}})
		return ctrl.Result{}, nil
	}
	if p.Pods == 0 && in.Want == 0 {
		p.Pods = len(in.Pods)
	}
	var blocked *eviction.Blocked
	for _, pod := range plan.Evict {
		err := eviction.EvictPod(ctx, r.Client, o.key.Namespace, pod.Name, pod.UID)
		if errors.As(err, &blocked) {
			break
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		p.Evicted, p.Blocked = r.now(), ""
		log.Info("Evicted pod", "kind", r.Kind.Name(), "pod", pod.Name, "since", p.Since)
	}
	result := ctrl.Result{RequeueAfter: time.Second}
	if blocked != nil {
		p.Blocked = blocked.Budget
		result.RequeueAfter = r.Evicting.backoff.Next(o.key.String())
		budget := "a PodDisruptionBudget"
		if blocked.Budget != "" {
			budget = "the PodDisruptionBudget " + blocked.Budget
		}
		r.warn(ctx, o.obj, []record.Cause{{Reason: record.ReasonEvictionBlocked, Note: fmt.Sprintf(
			"%s refused the eviction of pod %s: it allows no disruption now; retrying with backoff", budget, blocked.Pod)}})
	} else {
		r.Evicting.backoff.Reset(o.key.String())
	}
	if p != in.Progress {
		if err := r.progress(ctx, o.obj, &p); err != nil {
			return ctrl.Result{}, err
		}
	}
	return result, nil
}

// progress writes p as obj's eviction.ProgressAnnotation, or removes it
// when p is nil, guarded by the resourceVersion read, as one of nudge's own
// writes (memo.History): a reconcile that reads the workload from a cache
// behind it waits for it.
func (r *Reconciler) progress(ctx context.Context, obj client.Object, p *eviction.Progress) error {
	c := workload.Change{ResourceVersion: obj.GetResourceVersion(), Annotations: map[string]*string{eviction.ProgressAnnotation: nil}}
	if p != nil {
		c.Annotations[eviction.ProgressAnnotation] = ptr.To(p.String())
	}
	return r.written(client.ObjectKeyFromObject(obj), obj, false, func() error { return r.apply(ctx, obj, c) })
}
