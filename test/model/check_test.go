package model_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/model"
)

// appliedAnnotation is where nudge keeps a workload's applied state
// (docs/design.md, "applied state").
const appliedAnnotation = "nudge.dev/applied-fingerprint"

// digests maps what the model knows of an entry (source, whole or key, the
// content read) to the digest nudge wrote for it, learned the first time it
// was seen. The model does not compute digests (they are keyed); with this,
// an entry nudge did not update since the content changed is still told
// from one it did.
type digests map[string]string

func digestKey(id model.SourceID, e model.Entry) string {
	return fmt.Sprintf("%s|%t|%s", id, e.Whole, e.Content)
}

// learn records what a successful check saw.
func (d digests) learn(pending map[string]string) { maps.Copy(d, pending) }

// diff compares the world with the model: each Deployment's rollouts and,
// while nudge runs, the sources of its applied state, read whole or not,
// absent or not, with the digest of the content the model says. It returns
// one line per difference, "" when there is none; w.pending holds the
// digests seen for the first time.
func (w *world) diff(m *model.Model, seen digests) string {
	w.pending = map[string]string{}
	var b strings.Builder
	for _, name := range model.Workloads() {
		mw := m.Workloads[name]
		if mw == nil {
			continue
		}
		if got := w.revs.count(name); got != mw.Rollouts {
			fmt.Fprintf(&b, "  %s: %d rollouts, want %d\n", name, got, mw.Rollouts)
		}
		if !m.Up {
			continue
		}
		var d appsv1.Deployment
		if err := suite.K8s.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &d); err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", name, err)
			continue
		}
		if got := paceOf(d.Annotations); got != mw.Pace {
			fmt.Fprintf(&b, "  %s: %s, want %s\n", name, got, mw.Pace)
		}
		if diff := heldDiff(d.Annotations[heldAnnotation], mw.Held); diff != "" {
			fmt.Fprintf(&b, "  %s: %s\n", name, diff)
		}
		applied, ok := d.Annotations[appliedAnnotation]
		switch {
		case mw.Applied == nil && ok:
			fmt.Fprintf(&b, "  %s: applied state %q, want none\n", name, applied)
		case mw.Applied != nil && !ok:
			fmt.Fprintf(&b, "  %s: no applied state, want %s\n", name, render(mw.Applied))
		case ok:
			if diff := w.entries(applied, mw.Applied, seen); diff != "" {
				fmt.Fprintf(&b, "  %s: applied state %q, want %s: %s\n", name, applied, render(mw.Applied), diff)
			}
		}
	}
	return b.String()
}

// paceOf returns the pace annotations of a workload's annotations a.
func paceOf(a map[string]string) model.Pace {
	_, window := a[windowAnnotation]
	return model.Pace{Budget: a[budgetAnnotation], Window: window}
}

// heldDiff compares a workload's nudge.dev/held annotation, "" when absent,
// with the model's hold: none, or its reason and when it ends. Of a change
// held by a missing source the rules say nothing in that annotation.
func heldDiff(annotation string, want model.Hold) string {
	if want.Reason == model.HeldMissing {
		return ""
	}
	if annotation == "" {
		if want.Reason == "" {
			return ""
		}
		return fmt.Sprintf("nothing held, want %s", want)
	}
	got, ok := workload.ParseHeld(annotation)
	switch {
	case !ok:
		return fmt.Sprintf("held %q, not in its form", annotation)
	case want.Reason == "":
		return fmt.Sprintf("held %q, want nothing held", annotation)
	case got.Reason != want.Reason || !got.Until.Equal(want.Until):
		return fmt.Sprintf("held %q, want %s", annotation, want)
	}
	return ""
}

// entries compares one applied state with the model's.
func (w *world) entries(applied string, want model.State, seen digests) string {
	st, err := fingerprint.Parse(applied, w.ns)
	if err != nil {
		return err.Error()
	}
	var diffs []string
	for id, e := range want {
		got, ok := st.Entries[refs.Source{Kind: refs.Kind(id.Kind), Namespace: w.ns, Name: id.Name}]
		key := digestKey(id, e)
		switch {
		case !ok:
			diffs = append(diffs, id.String()+" missing")
		case (got.Shape == "") != e.Whole:
			diffs = append(diffs, id.String()+" read otherwise")
		case (got.Digest == fingerprint.Absent) != (e.Content == model.Absent):
			diffs = append(diffs, id.String()+" absent or not")
		case seen[key] != "" && seen[key] != got.Digest:
			diffs = append(diffs, id.String()+" has the digest of other content")
		case seen[key] == "":
			prefix := fmt.Sprintf("%s|%t|", id, e.Whole)
			for k, d := range seen {
				if strings.HasPrefix(k, prefix) && d == got.Digest {
					diffs = append(diffs, fmt.Sprintf("%s has the digest of content %q", id, strings.TrimPrefix(k, prefix)))
				}
			}
			w.pending[key] = got.Digest
		}
	}
	for src := range st.Entries {
		if _, ok := want[model.SourceID{Kind: model.Kind(src.Kind), Name: src.Name}]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s/%s not wanted", src.Kind, src.Name))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}

// render writes a model state as "ConfigMap/cm-a(whole)=k=v1,x=v2 ...".
func render(s model.State) string {
	var parts []string
	for id, e := range s {
		shape := "key"
		if e.Whole {
			shape = "whole"
		}
		parts = append(parts, fmt.Sprintf("%s(%s)=%s", id, shape, e.Content))
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
