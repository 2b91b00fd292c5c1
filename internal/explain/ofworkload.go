package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// maxEvents is how many of nudge's latest Events on a workload are shown.
const maxEvents = 10

// Workload explains the workload of kind namespace/name; an Argo Rollout
// with a spec.workloadRef through the pod template of the Deployment it
// names. It returns an error wrapping ErrUsage when the object has no pod
// template, or its workloadRef names a kind nudge does not read or a
// Deployment that does not exist, and the API's error when it cannot be
// read.
func (e Explainer) Workload(ctx context.Context, kind workload.Kind, namespace, name string) (*Workload, error) {
	obj := kind.New()
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind.Name(), namespace, name, err)
	}
	tmpl, err := workload.TemplateOf(ctx, e.Client, kind, obj)
	switch {
	case apierrors.IsNotFound(err) || errors.Is(err, workload.ErrRefKind):
		return nil, fmt.Errorf("%w: %s %s/%s: %w: nudge rolls nothing (Warning WorkloadRefMissing)", ErrUsage, kind.Name(), namespace, name, err)
	case err != nil:
		return nil, err
	case tmpl == nil:
		return nil, fmt.Errorf("%w: %s %s/%s has no pod template: nudge leaves it alone", ErrUsage, kind.Name(), namespace, name)
	}
	w := &Workload{Kind: kind.Name(), Namespace: namespace, Name: name, Install: e.Install,
		Annotations: annotations(obj.GetAnnotations(), tmpl.Annotations), References: []Reference{}}
	if ref, ok := workload.RefOf(kind, obj); ok {
		w.TemplateFrom = ref.String()
	}
	spec, errs := e.Dialect.Parse(namespace, obj.GetAnnotations(), tmpl.Annotations)
	for _, err := range errs {
		w.Malformed = append(w.Malformed, err.Error())
	}
	if t, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[workload.LastRolloutAnnotation]); err == nil {
		t = t.UTC()
		w.LastRollout = &t
	}
	key, cmp := e.key(ctx)
	w.Comparison = cmp
	res := e.resolver(key)
	if e.ProducerReadyTimeout > 0 {
		res.Producers = producer.Reader{Client: e.Client}
	}
	in, resolved, err := res.Inputs(ctx, obj, spec, tmpl, e.now())
	if err != nil {
		return nil, fmt.Errorf("resolving the references of %s %s/%s: %w", kind.Name(), namespace, name, err)
	}
	uses := refs.Uses(namespace, &tmpl.Spec)
	applied, appliedOK := appliedState(in, cmp.Compared)
	for _, r := range resolved {
		w.References = append(w.References, Reference{
			Kind: string(r.Kind), Namespace: r.Namespace, Name: r.Name, Keys: r.Keys, Optional: r.Optional,
			ReadAs:  readAs(r.Source, r.NeedsMatch, uses, spec),
			Outcome: string(r.Outcome),
			Content: content(r, in.Desired, applied, appliedOK),
			Matched: r.Matched,
		})
	}
	// When the wait for a producer began is the controller's memory: the
	// latest it ends is a timeout from now.
	in.Unready, in.UnreadyUntil = resolve.Unready(resolved), in.Now.Add(e.ProducerReadyTimeout)
	in.Maintenance, err = res.Maintenance(ctx, namespace, spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedWindow):
		w.Malformed = append(w.Malformed, err.Error())
	case err != nil && !unreadable(err):
		return nil, err
	}
	if err := pause(ctx, res, w, spec, resolved, &in); err != nil {
		return nil, err
	}
	if err := e.halt(ctx, obj, key, cmp, &in); err != nil {
		return nil, err
	}
	w.Status = e.status(spec, in, cmp, ownership.WrittenBackBy(obj.GetManagedFields()))
	if spec.Enabled(e.AutoReloadAll) {
		w.Status.Paused = pausedBy(kind.Name()+" "+namespace+"/"+name, in)
	}
	if w.Status.State == StateGated {
		w.Status.Message += unreadyProducers(resolved)
	}
	w.Status.Rollout = e.rollout(obj)
	if kind == workload.Job && in.Applied == "" && w.Status.State == StateFirstSight {
		w.Status.Message += " (nudge handles Jobs only when run with --recreate-jobs)"
	}
	if w.Rotation, err = e.rotation(ctx, kind, obj, &tmpl.Spec); err != nil {
		return nil, err
	}
	if w.Events, err = e.events(ctx, kind.Name(), namespace, name, maxEvents); err != nil {
		return nil, err
	}
	return w, nil
}

// appliedState returns the workload's applied state when it can be trusted:
// content compared, sealed, readable and of the current key.
func appliedState(in rollout.Input, compared bool) (fingerprint.State, bool) {
	if !compared || !in.Sealed {
		return fingerprint.State{}, false
	}
	s, err := fingerprint.Parse(in.Applied, in.Namespace)
	if err != nil || s.KeyID != in.Desired.KeyID {
		return fingerprint.State{}, false
	}
	return s, true
}

// content compares one reference's desired entry with its applied one.
func content(r resolve.Resolved, desired, applied fingerprint.State, appliedOK bool) string {
	switch r.Outcome {
	case resolve.Missing, resolve.Kept:
		return ContentMissing
	case resolve.Counted, resolve.AbsentOptional:
	default:
		return ContentNotCounted
	}
	if !appliedOK {
		return ContentUnknown
	}
	a, ok := applied.Entries[r.Source]
	d := desired.Entries[r.Source]
	switch {
	case !ok:
		return ContentNew
	case a.Shape != d.Shape:
		return ContentReadDifferently
	case a.Digest != d.Digest:
		return ContentChanged
	}
	return ContentUnchanged
}

// readAs says how the workload reads src: the pod spec's uses, the dialects
// that name it, and search when only Reloader's search mode selects it.
func readAs(src refs.Source, search bool, uses []refs.Use, spec dialect.Spec) []string {
	var out []string
	for _, u := range uses {
		if u.Source == src {
			out = append(out, string(u.Via))
		}
	}
	for _, n := range slices.Concat(spec.Named, spec.Refused) {
		if n.Matches(src) {
			out = append(out, "named:"+string(n.Dialect))
		}
	}
	if search {
		out = append(out, "search")
	}
	if _, ok := src.Kind.Selects(); ok {
		out = append(out, "selector")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// status turns rollout.Decide's decision on in into a Status; by is the
// manager that wrote its applied state back (ownership.WrittenBackBy), as
// the reconciler reads it.
func (e Explainer) status(spec dialect.Spec, in rollout.Input, cmp Comparison, by string) Status {
	if !spec.Enabled(e.AutoReloadAll) {
		return Status{State: StateNotManaged, Message: "no dialect annotation selects a source: nudge leaves it alone"}
	}
	if !cmp.Compared {
		return Status{State: StateUnknown, Message: "content not compared (see Content)"}
	}
	d := rollout.Decide(in)
	changed := make([]string, len(d.Changed))
	for i, s := range d.Changed {
		changed[i] = sourceName(s)
	}
	s := Status{Changed: changed}
	switch d.Action {
	case rollout.Baseline:
		if d.FirstSight {
			s.State, s.Message = StateFirstSight, firstSightMessage(in)
		} else {
			s.State, s.Message = StateRebaseline, "the set of references changed, not their content: nudge records it without a rollout"
		}
	case rollout.None:
		s.State, s.Message = StateUpToDate, "every source is as the running pods started with it"
	case rollout.Roll:
		s.State, s.Message = StateWouldRoll, "changed since the pods started: nudge rolls it: "+strings.Join(changed, ", ")
		// Explain does not see the changes as they come (rollout.Input.Changes),
		// so it cannot tell a lone change from one of a burst.
		if end := in.LastRollout.Add(in.Window); !in.LastRollout.IsZero() && in.Now.Before(end) {
			s.Message = fmt.Sprintf("changed since the pods started, within the rollout window (%s) after the last rollout: "+
				"nudge rolls it at once if the change came alone, else once its sources have been quiet for %s, by %s at the latest: %s",
				in.Window, rollout.Quiet(in.Window), end.UTC().Format(time.RFC3339), strings.Join(changed, ", "))
		}
	case rollout.Wait:
		until := in.Now.Add(d.RequeueAfter).UTC()
		s.State, s.Until = StateWaiting, &until
		s.Message = fmt.Sprintf("changed in a burst of changes, within the rollout window (%s) after the last rollout: nudge rolls it once its sources are quiet, by the window's end at the latest: %s",
			in.Window, strings.Join(changed, ", "))
	case rollout.Hold:
		var missing []string
		for _, r := range in.Missing {
			missing = append(missing, sourceName(r.Source))
		}
		verb := "are"
		if len(missing) == 1 {
			verb = "is"
		}
		s.State = StateHeld
		s.Message = fmt.Sprintf("changed, but the required %s %s missing: new pods could not start, so nudge waits for it: %s",
			strings.Join(missing, ", "), verb, strings.Join(changed, ", "))
	case rollout.Pending:
		s.State = StatePending
		s.Message = fmt.Sprintf("pending (waiting for a rollout slot): changed, and nudge rolls it when fewer than %d of its rollouts are in flight: %s",
			e.MaxConcurrentRollouts, strings.Join(changed, ", "))
	case rollout.Halted:
		s.State = StateHalted
		s.Message = fmt.Sprintf("halted (for %s content %s, after %s failed): nudge rolls it when %s changes again, or when the annotation %s is removed",
			sourceName(d.Halt.Source), d.Halt.Digest, d.Halt.After, sourceName(d.Halt.Source), fleet.HaltedAnnotation)
	case rollout.Deferred, rollout.Braked, rollout.Gated:
		until := in.Now.Add(d.RequeueAfter).UTC()
		s.Until = &until
		switch d.Action {
		case rollout.Deferred:
			s.State = StateDeferred
			s.Message = fmt.Sprintf("changed outside the maintenance window: nudge rolls it once, when the window opens at %s: %s",
				until.Format(time.RFC3339), strings.Join(changed, ", "))
		case rollout.Braked:
			s.State = StateBraked
			s.Message = fmt.Sprintf("changed, but rolled %d times in the last hour, its budget (the storm brake): nudge rolls it once, with the content as it is then, at %s: %s",
				in.Budget, until.Format(time.RFC3339), strings.Join(changed, ", "))
		default:
			s.State, s.Until = StateGated, nil
			s.Message = fmt.Sprintf("changed, but a changed Secret's producer is not ready: nudge rolls it once it is, or "+
				"--producer-ready-timeout (%s) after it saw the change at the latest: %s", e.ProducerReadyTimeout, strings.Join(changed, ", "))
		}
	case rollout.Paused:
		s.State = StatePaused
		s.Message = fmt.Sprintf("changed, but paused by nudge.dev/paused on %s: nudge rolls it once, with the content as it is then, when the pause is lifted: %s",
			pauseHolder(in, d.Changed), strings.Join(changed, ", "))
	case rollout.Restored:
		s.State, s.WrittenBackBy = StateRestored, by
		s.Message = fmt.Sprintf("the applied state was written back by %s to one nudge had replaced (a manifest exported from the live object "+
			"and applied again?): nudge does not roll it, whatever changes, until the nudge.dev/ keys are removed from that manifest "+
			"(nudge then records a new baseline)", by)
	default:
		s.State, s.Message = StateUnknown, "nudge's decision: "+d.Action.String()
	}
	return s
}

func firstSightMessage(in rollout.Input) string {
	switch {
	case in.Applied == "":
		return "no applied state yet: nudge records what the pods run with, and does not roll"
	case !in.Sealed:
		return "the applied state was not written by nudge last (no matching seal): nudge records a new baseline, and does not roll"
	}
	return "the applied state is of another key or unreadable: nudge records a new baseline, and does not roll"
}

// sourceName renders "ConfigMap shop/app".
func sourceName(s refs.Source) string { return string(s.Kind) + " " + s.Namespace + "/" + s.Name }

func sortEvents(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
}

// halt reads the workload's nudge.dev/halted into in (rollout.Input.Halts,
// as the reconciler reads it: fleet.Marked), with its source's content
// now; with --max-concurrent-rollouts, it also turns waves on, no slot
// free, so that a change shows as pending. Without the key nothing is
// compared, and nothing is read.
func (e Explainer) halt(ctx context.Context, obj client.Object, key fingerprint.Key, cmp Comparison, in *rollout.Input) error {
	in.Waves = e.MaxConcurrentRollouts > 0
	if !cmp.Compared {
		return nil
	}
	h, ok, err := fleet.Marked(ctx, obj, func(ctx context.Context, src refs.Source) (string, error) {
		obj, err := e.source(ctx, src)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", sourceName(src), err)
		}
		return sources.ContentDigest(key, src, obj), nil
	})
	if ok {
		in.Halts = []rollout.Halt{h}
	}
	return err
}

// rollout returns Status.Rollout for obj: "" unless nudge rolled it with
// --max-concurrent-rollouts (nudge.dev/rolled-for) and the rollout is not
// complete.
func (e Explainer) rollout(obj client.Object) string {
	if obj.GetAnnotations()[fleet.RolledForAnnotation] == "" {
		return ""
	}
	switch p, reason, _ := fleet.ProgressOf(obj, e.now(), e.RolloutTimeout); p {
	case fleet.Rolling:
		return "in flight: the rollout nudge started is not complete (it takes a rollout slot)"
	case fleet.Failed:
		return "failed (" + reason + "): it halts the workloads waiting on the same change"
	}
	return ""
}

// source reads a ConfigMap or Secret digested; nil, without an error, when
// it does not exist.
func (e Explainer) source(ctx context.Context, src refs.Source) (client.Object, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if src.Kind == refs.Secret {
		obj = &corev1.Secret{}
	}
	err := digested{e.Client, e.Dialect}.Get(ctx, client.ObjectKey{Namespace: src.Namespace, Name: src.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return obj, nil
}

// unreadyProducers names the producers not ready of resolved, and why:
// "; ExternalSecret shop/db is not ready (SecretSyncedError: ...)".
func unreadyProducers(resolved []resolve.Resolved) string {
	var b strings.Builder
	for _, r := range resolved {
		if p := r.Producer; p.Known && !p.Ready {
			fmt.Fprintf(&b, "; %s is not ready", p.Producer)
			if p.Reason != "" {
				fmt.Fprintf(&b, " (%s)", p.Reason)
			}
		}
	}
	return b.String()
}
