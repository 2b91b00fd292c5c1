package controller

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
)

// warnings remembers the causes last warned about per workload, so each
// cause gives one Warning Event and log line when it appears, not one per
// reconcile or resync. A cause that goes away and comes back warns again.
type warnings struct {
	mu   sync.Mutex
	last map[types.NamespacedName][]record.Cause
}

// fresh stores causes as the current ones of key and returns those that were
// not current before.
func (w *warnings) fresh(key types.NamespacedName, causes []record.Cause) []record.Cause {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.last[key]
	var out []record.Cause
	for _, c := range causes {
		if !slices.Contains(prev, c) {
			out = append(out, c)
		}
	}
	if len(causes) == 0 {
		delete(w.last, key)
		return nil
	}
	if w.last == nil {
		w.last = map[types.NamespacedName][]record.Cause{}
	}
	w.last[key] = causes
	return out
}

// unseen returns the notes of causes that are not current for key: those
// a warn would record now.
func (w *warnings) unseen(key types.NamespacedName, causes []record.Cause) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for _, c := range causes {
		c.Note = record.Note(c.Note)
		if !slices.Contains(w.last[key], c) {
			out[c.Note] = true
		}
	}
	return out
}

func (w *warnings) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// warn records a Warning Event and a log line for every new cause of obj.
// Notes are cut to what an Event holds (see record.Note) before they are
// remembered.
func (r *Reconciler) warn(ctx context.Context, obj client.Object, causes []record.Cause) {
	for i := range causes {
		causes[i].Note = record.Note(causes[i].Note)
	}
	for _, c := range r.warnings.fresh(client.ObjectKeyFromObject(obj), causes) {
		r.record(ctx, obj, c)
	}
}

// record records a Warning Event of c about obj, and a log line.
func (r *Reconciler) record(ctx context.Context, obj client.Object, c record.Cause) {
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Check", "%s", c.Note)
	ctrl.LoggerFrom(ctx).Info("Warned about "+r.Kind.Name(), "reason", c.Reason, "message", c.Note)
	r.Metrics.Warned(c.Reason)
}
