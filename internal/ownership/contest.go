package ownership

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/rollout"
)

// contestWindow is how long after taking a workload's state over from
// another key nudge reads that key's return as a contest rather than a
// handover, and how long it then leaves the workload alone.
const contestWindow = 5 * time.Minute

// Takeovers remembers when nudge last replaced, on a workload, a state
// written with another fingerprint key (a first sight: rule 3).
//
// Two nudges with different keys that both handle a workload (two releases
// whose --namespace-selector values both match its namespace) would
// otherwise replace each other's state for ever, each write being the
// other's first sight: many writes a second and never a rollout. With
// Takeovers, the one that finds its takeover undone within contestWindow
// leaves the state to the other, says so (record.ReasonStateContested), and looks
// again after the window: a few writes per window instead, and the changes
// rolled by whichever holds the state. A namespace handed from one shard to
// another (relabelled) is taken over once, as before.
//
// The zero value is ready to use; it is safe for concurrent use. It holds
// one entry per workload taken over in the last contestWindow (older ones
// are dropped as it grows).
type Takeovers struct {
	mu    sync.Mutex
	at    map[types.NamespacedName]time.Time
	prune int // len(at) at which expired entries are dropped next
}

// foreignKey returns the key ID of in's applied state when it is another
// than own, else "".
func foreignKey(in rollout.Input, own string) string {
	if in.Applied == "" {
		return ""
	}
	s, err := fingerprint.Parse(in.Applied, in.Namespace)
	if err != nil || s.KeyID == own {
		return ""
	}
	return s.KeyID
}

// Took records that a baseline nudge wrote on key, with inputs in, replaced
// a state of another key than own.
func (t *Takeovers) Took(key types.NamespacedName, in rollout.Input, own string) {
	if foreignKey(in, own) == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[types.NamespacedName]time.Time{}
	}
	t.at[key] = in.Now
	if len(t.at) >= t.prune {
		for k, at := range t.at {
			if in.Now.Sub(at) >= contestWindow {
				delete(t.at, k)
			}
		}
		t.prune = max(2*len(t.at), 64)
	}
}

// Contested returns, when the state in holds is another key's than own,
// written over the one nudge took over from it less than contestWindow
// ago, how long to leave key alone (rollout.Input.Contested) and the
// Warning to give when rollout.Decide says so; else 0.
func (t *Takeovers) Contested(key types.NamespacedName, in rollout.Input, own string) (time.Duration, record.Cause) {
	other := foreignKey(in, own)
	if other == "" {
		return 0, record.Cause{}
	}
	t.mu.Lock()
	at, ok := t.at[key]
	t.mu.Unlock()
	left := contestWindow - in.Now.Sub(at)
	if !ok || left <= 0 {
		return 0, record.Cause{}
	}
	return left, record.Cause{Reason: record.ReasonStateContested, Note: fmt.Sprintf(
		"Another nudge, with key %s, replaced the state this nudge (key %s) wrote: do two nudge releases select namespace %s? "+
			"Give them disjoint --namespace-selector values, or one key Secret (docs/scaling.md). Not writing this workload's state for %s",
		other, own, key.Namespace, contestWindow)}
}

// Forget drops what is known of key (deleted).
func (t *Takeovers) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.at, key)
}
