package memo

import (
	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/ownership"
)

// Workloads is everything the reconciler of one workload kind remembers of
// each of its workloads between reconciles. The zero value is ready to
// use; it is safe for concurrent use.
type Workloads struct {
	// History is nudge's last write per workload, to tell a stale cache.
	History History
	// Unrolled is when nudge saw a source change of a workload not rolled
	// yet, for its latency.
	Unrolled Unrolled
	// Births are the workloads seen created, for first sight (rule 3).
	Births Births
	// Producers are when each workload began to wait for a Secret's
	// producer to be ready (the producer-ready gate).
	Producers Producers
	// Warnings are the causes last warned about.
	Warnings Warnings
	// Taken are the states taken over from another key.
	Taken ownership.Takeovers
	// Rollouts are this nudge's own rollouts of the last minute, to tell
	// another nudge's. They end on their own, a minute after, and are not
	// forgotten with the workload: a rollout stamp read back is this
	// nudge's whatever became of the workload meanwhile.
	Rollouts Rollouts
}

// Forget drops what is remembered of the workload key, deleted: all but its
// Rollouts, which end on their own.
func (w *Workloads) Forget(key types.NamespacedName) {
	w.Warnings.Forget(key)
	w.History.Forget(key)
	w.Taken.Forget(key)
	w.Unrolled.Forget(key)
	w.Births.Forget(key)
	w.Producers.Forget(key)
}
