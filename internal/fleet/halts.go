package fleet

import (
	"context"
	"maps"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// The halts of Waves: the failed rollouts nudge started, by workload
// (failed), indexed by the content they halt (halts, see observeLocked),
// and the workloads held for them.

// Bounds of the failed rollouts remembered: a failure past maxFailures is
// not remembered (and halts nothing) until one is forgotten; of one
// rollout, the first maxFailureEntries sources halt. Both are logged when
// reached.
const (
	maxFailures       = 1000
	maxFailureEntries = 64
)

// failure is a failed rollout nudge started: the content of each source it
// rolled to (copied out of RolledForAnnotation, see parseDigests).
type failure []sourceDigest

// haltKey is a content a failure halts, and the namespace of the failed
// workload: a halt holds only the workloads of that namespace.
type haltKey struct {
	namespace string
	sourceDigest
}

// failed records that the rollout of key failed, having rolled to sds (nil:
// it did not fail, or its RolledForAnnotation is not nudge's), in place of
// what was recorded of key; fresh reports that a halt was added. Called
// with w.mu held.
func (w *Waves) failed(ctx context.Context, key Key, sds []sourceDigest) (fresh bool) {
	was, had := w.failures[key]
	all := len(sds)
	sds = sds[:min(all, maxFailureEntries)]
	if had && slices.Equal(was, failure(sds)) {
		return false
	}
	if all > maxFailureEntries {
		ctrl.LoggerFrom(ctx).Info("Halted for the first sources of a failed rollout only", "kind", key.Kind,
			"workload", key.NamespacedName, "sources", all, "limit", maxFailureEntries)
	}
	w.forget(key)
	if len(sds) == 0 {
		return false
	}
	if len(w.failures) >= maxFailures {
		if !w.full {
			ctrl.LoggerFrom(ctx).Info("Reached the limit of failed rollouts remembered; further failures halt nothing until one recovers",
				"limit", maxFailures, "kind", key.Kind, "workload", key.NamespacedName)
		}
		w.full = true
		return false
	}
	w.failures[key] = sds
	for _, sd := range sds {
		hk := haltKey{key.Namespace, sd}
		if w.halts[hk] == nil {
			w.halts[hk] = map[Key]struct{}{}
		}
		w.halts[hk][key] = struct{}{}
		w.sourcesHalted[haltKey{key.Namespace, sourceDigest{source: sd.source}}]++
	}
	return true
}

// forget drops what is recorded of key's failure, if any. Called with w.mu
// held.
func (w *Waves) forget(key Key) {
	f, ok := w.failures[key]
	if !ok {
		return
	}
	delete(w.failures, key)
	w.full = false
	for _, sd := range f {
		hk := haltKey{key.Namespace, sd}
		delete(w.halts[hk], key)
		if len(w.halts[hk]) == 0 {
			delete(w.halts, hk)
		}
		if sk := (haltKey{key.Namespace, sourceDigest{source: sd.source}}); w.sourcesHalted[sk] > 1 {
			w.sourcesHalted[sk]--
		} else {
			delete(w.sourcesHalted, sk)
		}
	}
}

// halting returns, sorted, the sources of entries of which a failed
// rollout in key's namespace is remembered, whatever its content; none
// when a user removed the hold nudge wrote on key (unheld: its version is
// not the one nudge wrote the hold over).
func (w *Waves) halting(key Key, version string, entries map[refs.Source]fingerprint.Entry) []refs.Source {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if over, ok := w.marked[key]; ok && over != version {
		return nil
	}
	if len(w.sourcesHalted) == 0 {
		return nil
	}
	var out []refs.Source
	for src := range entries {
		if w.sourcesHalted[haltKey{key.Namespace, sourceDigest{source: src}}] > 0 {
			out = append(out, src)
		}
	}
	slices.SortFunc(out, refs.Source.Compare)
	return out
}

// failedAfter returns the workload whose rollout of src's content digest
// failed in key's namespace ("Deployment shop/web", the first by
// Key.Compare when several), and whether one did.
func (w *Waves) failedAfter(key Key, src refs.Source, digest string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := w.halts[haltKey{key.Namespace, sourceDigest{src, digest}}]
	if len(by) == 0 {
		return "", false
	}
	first := slices.MinFunc(slices.Collect(maps.Keys(by)), Key.Compare)
	return first.Kind + " " + first.Namespace + "/" + first.Name, true
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
