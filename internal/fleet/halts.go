package fleet

import (
	"maps"
	"slices"

	"nudge.dev/nudge/internal/refs"
)

// The halts of Waves: the failed rollouts by source (see observeLocked), and
// the workloads held for them.

// haltFor returns the failed rollout that holds a change of key to the
// given sources, each with its content digest now; none when a user removed
// the hold nudge wrote on key (unheld: its version is not the one nudge
// wrote the hold over).
func (w *Waves) haltFor(key Key, version string, changed map[refs.Source]string) (refs.Source, halt, bool) {
	if w == nil {
		return refs.Source{}, halt{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if over, ok := w.marked[key]; ok && over != version {
		return refs.Source{}, halt{}, false
	}
	for _, src := range slices.SortedFunc(maps.Keys(changed), refs.Source.Compare) {
		if h, ok := w.halts[src]; ok && h.Digest == changed[src] {
			return src, h, true
		}
	}
	return refs.Source{}, halt{}, false
}

// hold records whether key is held now; wroteHold, that nudge wrote the hold
// on it over version over.
func (w *Waves) hold(key Key, held bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if held {
		w.held[key] = true
	} else {
		delete(w.held, key)
	}
	w.gauge()
}

func (w *Waves) wroteHold(key Key, over string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.marked[key] = over
}

// unmark forgets that nudge wrote a hold on key (it removed it).
func (w *Waves) unmark(key Key) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.marked, key)
}
