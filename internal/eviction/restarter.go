package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reasons of the Warning Events a restart deserves (record.Reason*
// names them for the rest of nudge).
const (
	// ReasonBlocked: a PodDisruptionBudget refused an eviction.
	ReasonBlocked = "EvictionBlocked"
	// ReasonHalted: a replacement was not Ready in time, and the restart
	// halted.
	ReasonHalted = "RestartHalted"
	// ReasonOff: a workload asks for a restart that --enable-eviction
	// does not allow.
	ReasonOff = "EvictionOff"
	// ReasonMalformed: the restart's annotation does not read, or its
	// owner says nothing of its pods.
	ReasonMalformed = "MalformedAnnotation"
)

// Warning is a Warning Event a restart deserves: its reason (above) and
// note.
type Warning struct{ Reason, Note string }

// Restarter restarts, through the Eviction API, the pods a rollout's
// template change cannot reach (--enable-eviction): it reads where a
// restart stands (Observe) and carries out its plan (Carry). It is safe for
// concurrent use by the reconcilers of every kind.
type Restarter struct {
	// Kinds are the workload kinds restarted without the annotation
	// (--evict-pods-of).
	Kinds []schema.GroupKind
	// Timeout is how long a replacement may take to be Ready
	// (--rollout-timeout); 0 for no limit.
	Timeout time.Duration
	// backoff spaces the evictions a PodDisruptionBudget refused.
	backoff Backoff
}

// Workload is a workload whose restart Observe reads.
type Workload struct {
	Key types.NamespacedName
	// Kind is its group and kind; New returns an empty object of it.
	Kind schema.GroupKind
	New  func() client.Object
	// Annotations are its annotations as the cache holds them.
	Annotations map[string]string
	// Asked says it asks to be restarted (nudge.dev/rollout-strategy
	// "evict"); MaxUnavailable is its nudge.dev/max-unavailable, 0 unset.
	Asked          bool
	MaxUnavailable int
	Now            time.Time
}

// Observed is what Observe read of a workload's restart.
type Observed struct {
	// Evicts says a rollout of the workload starts a restart.
	Evicts bool
	// Input, when not nil, is the restart under way: what PlanOf plans.
	Input *Input
	// Unfinished says the restart is halted or past Timeout
	// (nudge_unfinished_restarts).
	Unfinished bool
	// Warnings are those found: the annotation asked without
	// --enable-eviction (r nil), a progress that does not read.
	Warnings []Warning
}

// Observe reads, for a decision on w, whether a rollout starts a restart
// and, while one is under way and not halted (ProgressAnnotation), the
// workload as the API server holds it and its pods, by one GET and one LIST
// of its selector in its namespace, through reader. r may be nil (eviction
// off). It returns the API server's error.
func (r *Restarter) Observe(ctx context.Context, reader client.Reader, w Workload) (Observed, error) {
	if r == nil {
		if w.Asked {
			return Observed{Warnings: []Warning{{ReasonOff, `nudge.dev/rollout-strategy "evict" needs nudge's --enable-eviction (chart value eviction.enabled): only the pod template is changed`}}}, nil
		}
		return Observed{}, nil
	}
	o := Observed{Evicts: w.Asked || slices.Contains(r.Kinds, w.Kind)}
	v, found := w.Annotations[ProgressAnnotation]
	if !found || !o.Evicts {
		return o, nil
	}
	p, err := ParseProgress(v)
	if err != nil {
		o.Warnings = []Warning{{ReasonMalformed, fmt.Sprintf(
			"annotation %s: %v; no pod is evicted until the next rollout (or remove it)", ProgressAnnotation, err)}}
		return o, nil
	}
	o.Unfinished = p.Halted || (r.Timeout > 0 && w.Now.Sub(p.Since) > r.Timeout)
	if p.Halted {
		return o, nil
	}
	live := w.New()
	if err := reader.Get(ctx, w.Key, live); err != nil {
		return o, fmt.Errorf("reading the workload whose pods are restarted: %w", err)
	}
	owner, err := OwnerOf(live)
	if err != nil {
		o.Warnings = []Warning{{ReasonMalformed, err.Error() + "; no pod is evicted"}}
		return o, nil
	}
	pods, err := PodsOf(ctx, reader, w.Key.Namespace, owner.Selector, live.GetUID())
	if err != nil {
		return o, err
	}
	o.Input = &Input{Pods: pods, Progress: p, Want: owner.Want, MaxUnavailable: w.MaxUnavailable,
		Now: w.Now, Unobserved: !owner.Observed, Timeout: r.Timeout}
	return o, nil
}

// Reporter writes and records for Carry what a restart did.
type Reporter interface {
	// Progress writes p as the workload's ProgressAnnotation, or removes it
	// when p is nil, as one of nudge's own writes; it returns the API
	// server's error.
	Progress(ctx context.Context, p *Progress) error
	// Warn records a Warning Event on the workload.
	Warn(ctx context.Context, w Warning)
}

// Carry carries out plan, PlanOf(*in), for the workload key through c: the
// pods it names evicted, one after another, and the progress written; a
// refusal by a PodDisruptionBudget warned about, named in the progress, and
// tried again with backoff; a halt written and warned about; the progress
// removed once done. It returns when to come back (0: not) and the API
// server's error.
func (r *Restarter) Carry(ctx context.Context, c client.Client, rep Reporter, key types.NamespacedName, in *Input, plan Plan) (time.Duration, error) {
	p := in.Progress
	log := ctrl.LoggerFrom(ctx)
	switch plan.Step {
	case Wait:
		return plan.After, nil
	case Done:
		r.backoff.Reset(key.String())
		log.Info("Restarted the pods", "since", p.Since)
		return 0, rep.Progress(ctx, nil)
	case Stuck:
		p.Halted = true
		if err := rep.Progress(ctx, &p); err != nil {
			return 0, err
		}
		rep.Warn(ctx, Warning{ReasonHalted, fmt.Sprintf(
			"Halted the restart of the pods that started before %s: a replacement was not Ready within %s (--rollout-timeout) after the last eviction; %d pod(s) still predate the change. The next change starts it again",
			p.Since.UTC().Format(time.RFC3339), in.Timeout, plan.Old)})
		return 0, nil
	}
	if p.Pods == 0 && in.Want == 0 {
		p.Pods = len(in.Pods)
	}
	var blocked *Blocked
	for _, pod := range plan.Evict {
		err := EvictPod(ctx, c, key.Namespace, pod.Name, pod.UID)
		if errors.As(err, &blocked) {
			break
		}
		if err != nil {
			return 0, err
		}
		p.Evicted, p.Blocked = in.Now, ""
		log.Info("Evicted pod", "pod", pod.Name, "since", p.Since)
	}
	after := time.Second
	if blocked != nil {
		p.Blocked = blocked.Budget
		after = r.backoff.Next(key.String())
		budget := "a PodDisruptionBudget"
		if blocked.Budget != "" {
			budget = "the PodDisruptionBudget " + blocked.Budget
		}
		rep.Warn(ctx, Warning{ReasonBlocked, fmt.Sprintf(
			"%s refused the eviction of pod %s: it allows no disruption now; retrying with backoff", budget, blocked.Pod)})
	} else {
		r.backoff.Reset(key.String())
	}
	if p != in.Progress {
		if err := rep.Progress(ctx, &p); err != nil {
			return 0, err
		}
	}
	return after, nil
}
