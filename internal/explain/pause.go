package explain

import (
	"context"
	"errors"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/rollout"
)

// pause reads what pauses the workload into in (its own nudge.dev/paused,
// its Namespace's, its sources'; see resolve.Resolver.Pause) and adds the
// malformed ones to w.Malformed. A Namespace the user may not read pauses
// nothing here. It returns the API's other errors.
func pause(ctx context.Context, res resolve.Resolver, w *Workload, spec dialect.Spec, resolved []resolve.Resolved, in *rollout.Input) error {
	var err error
	in.PausedBy, err = res.Pause(ctx, w.Namespace, spec)
	switch {
	case errors.Is(err, resolve.ErrMalformedPause):
		w.Malformed = append(w.Malformed, err.Error())
	case err != nil && !unreadable(err):
		return err
	}
	for _, r := range resolved {
		if r.PauseError != nil {
			w.Malformed = append(w.Malformed, r.PauseError.Error())
		}
	}
	return nil
}

// pausedBy lists what pauses the rollouts of the workload named name whose
// input is in (see Status.Paused).
func pausedBy(name string, in rollout.Input) []string {
	var out []string
	switch in.PausedBy {
	case rollout.PausedWorkload:
		out = append(out, name)
	case rollout.PausedNamespace:
		out = append(out, "Namespace "+in.Namespace)
	}
	for _, s := range in.PausedSources {
		out = append(out, sourceName(s))
	}
	return out
}

// pauseHolder says, for a Paused decision on in of the sources changed,
// where the pause that holds it is set.
func pauseHolder(in rollout.Input, changed []refs.Source) string {
	switch in.PausedBy {
	case rollout.PausedWorkload:
		return "the workload"
	case rollout.PausedNamespace:
		return "Namespace " + in.Namespace
	}
	names := make([]string, len(changed))
	for i, s := range changed {
		names[i] = sourceName(s)
	}
	return "the changed source(s) " + strings.Join(names, ", ")
}

// paused adds the workload named name, of dialect spec and input in (as
// res resolved it, comparing content when compared), to f.Paused when a
// pause holds it wholly or for a source it reads. It returns the API's
// errors but a refused read.
func (e Explainer) paused(ctx context.Context, f *Fleet, res resolve.Resolver, compared bool, name string, spec dialect.Spec, in rollout.Input) error {
	var err error
	in.PausedBy, err = res.Pause(ctx, in.Namespace, spec)
	if err != nil && !errors.Is(err, resolve.ErrMalformedPause) && !unreadable(err) {
		return err
	}
	by := pausedBy(name, in)
	if len(by) == 0 {
		return nil
	}
	p := Paused{Workload: name, By: by, Compared: compared}
	if d := rollout.Decide(in); compared && d.Action == rollout.Paused {
		for _, s := range d.Changed {
			p.Waiting = append(p.Waiting, sourceName(s))
		}
	}
	f.Paused = append(f.Paused, p)
	return nil
}

// pausedRows are the rows of status's section of paused workloads.
func pausedRows(paused []Paused) [][]string {
	var rows [][]string
	for _, p := range paused {
		waiting := strings.Join(p.Waiting, ", ")
		switch {
		case !p.Compared:
			waiting = "unknown (content not compared: nudge's key is not readable)"
		case waiting == "":
			waiting = "nothing"
		}
		rows = append(rows, []string{p.Workload, strings.Join(p.By, ", "), waiting})
	}
	return rows
}

// heldByPause says, for a source's dependent obj (of dialect spec and
// input in) that src's change would roll, where a pause holding that
// rollout is set: "; held while paused (nudge.dev/paused on ...): ...",
// "" when none does. A Namespace that cannot be read pauses nothing here.
func heldByPause(ctx context.Context, res resolve.Resolver, obj client.Object, spec dialect.Spec, src refs.Source, in rollout.Input) string {
	in.PausedBy, _ = res.Pause(ctx, obj.GetNamespace(), spec)
	if in.PausedBy == "" && !slices.Contains(in.PausedSources, src) {
		return ""
	}
	return "; held while paused (nudge.dev/paused on " + pauseHolder(in, []refs.Source{src}) + "): it rolls once when the pause is lifted"
}
