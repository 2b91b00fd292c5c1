package memo

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/rollout"
)

// Unrolled remembers, per workload, when nudge first saw a change of one of
// its sources that has not been rolled yet, for nudge_rollout_latency_seconds.
// An entry lives from the source's event until the workload is rolled, or
// reconciled to a decision that rolls nothing (a baseline, no change), or
// deleted; waiting for the window, a slot, a missing source or a halt keeps
// it. A rollout put off by policy (a maintenance window, the storm brake, a
// producer not ready, a pause: rollout.Deferred, Braked, Gated, Paused)
// forgets it: the latency measures nudge, and those waits are the user's
// choice, hours long for a window. The zero value is ready to use; it is safe for concurrent use.
type Unrolled struct {
	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// Saw records a change of a source of key seen at now, unless an earlier
// one is not rolled yet.
func (c *Unrolled) Saw(key types.NamespacedName, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.at[key]; ok {
		return
	}
	if c.at == nil {
		c.at = map[types.NamespacedName]time.Time{}
	}
	c.at[key] = now
}

// Take returns and forgets when the change key was rolled for was seen.
func (c *Unrolled) Take(key types.NamespacedName) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[key]
	delete(c.at, key)
	return at, ok
}

// Settle forgets the change of key when decision a rolls nothing for it,
// now or later.
func (c *Unrolled) Settle(key types.NamespacedName, a rollout.Action) {
	switch a {
	case rollout.Roll, rollout.Wait, rollout.Pending, rollout.Hold, rollout.Halted:
		return
	}
	c.Forget(key)
}

// Forget drops what is known of key.
func (c *Unrolled) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at, key)
}
