// Package rollout holds the decision whether a workload rolls, and why:
// Decide is a pure function of the applied state, the desired state, the
// changes remembered, the clock and the rollout window (Input), answering
// one Action (Decision):
//
//   - None: nothing to do;
//   - Baseline: write the desired state, no rollout;
//   - Roll: write the trigger and the desired state;
//   - Wait: a burst inside the rollout window, roll later;
//   - Hold: a required source is missing;
//   - Restored: a state nudge replaced was written back, leave it;
//   - Pending: no rollout slot is free (waves);
//   - Halted: a rollout of the same change failed elsewhere (waves);
//   - Deferred: the maintenance window is closed;
//   - Braked: past the storm brake's budget;
//   - Gated: a changed Secret's producer is not ready;
//   - Paused: nudge.dev/paused holds it (workload, Namespace or source).
//   - Evict: a restart of the pods through the Eviction API goes on
//     (evict, wait for a replacement, done, or halted).
//   - Contested: another key's state, contested, is left alone.
//
// The reconciler gathers those inputs and performs the writes; which
// writes each action makes is the table "What each action writes" in
// docs/design.md.
package rollout
