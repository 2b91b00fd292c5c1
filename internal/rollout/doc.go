// Package rollout holds the decision whether a workload rolls, and why:
// Decide is a pure function of the applied state, the desired state, the
// changes remembered, the clock and the rollout window (Input), answering
// None, Baseline, Roll, Wait, Hold, Restored, Pending or Halted (Decision).
// The reconciler gathers those inputs and performs the write.
package rollout
