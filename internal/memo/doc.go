// Package memo holds what the reconciler remembers of each workload between
// reconciles (Workloads): its last write, the change not rolled yet, its
// creation, its waits for a cache behind the API server or behind another
// nudge, its warnings, the states it took over, and its own rollouts; and,
// per source, when the cache last caught up with the API server
// (CaughtUp). None of it survives a restart, and none of it need: what
// must is in the workloads' annotations.
package memo
