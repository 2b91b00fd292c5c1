// Package fleet holds the fleet-wide safety of rollouts
// (--max-concurrent-rollouts): the waves that bound the rollouts in flight,
// each workload's progress as its own controller reports it, and the halts
// that hold a change whose rollout failed elsewhere.
package fleet
