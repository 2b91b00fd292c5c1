package memo

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/record"
)

// Warnings remembers the causes last warned about per workload, so each
// cause gives one Warning Event and log line when it appears, not one per
// reconcile or resync. A cause that goes away and comes back warns again.
type Warnings struct {
	mu   sync.Mutex
	last map[types.NamespacedName][]record.Cause
}

// Fresh stores causes as the current ones of key and returns those that were
// not current before.
func (w *Warnings) Fresh(key types.NamespacedName, causes []record.Cause) []record.Cause {
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

// Unseen returns the notes of causes that are not current for key: those
// a warn would record now.
func (w *Warnings) Unseen(key types.NamespacedName, causes []record.Cause) map[string]bool {
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

// Forget drops the causes of key (deleted).
func (w *Warnings) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}
