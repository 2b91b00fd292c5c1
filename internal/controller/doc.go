// Package controller holds the workload reconciler: for one workload kind,
// it observes what the workload references and what its sources hold now,
// from the caches (observe.go, over resolve.Resolver); decides once what to
// do (decision.go: rollout.Decide, then the fleet's waves, a takeover
// contest and a cache the rollout may not trust); acts, writing the one change
// the decision calls for (reconciler.go, roll.go); and records it: Events,
// log lines, metrics (events.go) and what it remembers of the workload
// (memo.Workloads). The watches that feed it are set up in manager.go.
package controller
