// Package lag tells when nudge's cache is behind the API server where a
// reconcile may not trust it, by asking the API server for a source's
// resourceVersion with one metadata-only LIST by name (nudge may list, not
// get, Secrets).
//
// Two cases ask (see docs/design.md, rules 1, 3 and 13):
//
//   - A source created just before its workload may reach the cache after
//     the workload does: before warning that a source does not exist, a
//     reconcile asks, and while the cache is behind it waits (Missing).
//   - A rollout is decided on the cache, which may be behind by a change
//     already written. A rollout the changed source's own event did not
//     bring (a recheck: it trails a burst, or catches up a change nudge did
//     not see happen) would write content already superseded, then roll
//     again for the newer; one of a workload another nudge rolled within a
//     minute (a shard's successor, a new leader) would write its older
//     state over the other's. Both ask first (Rollout). A source once found
//     caught up at T covers every rollout another nudge stamped before T
//     less memo.ClockSkew (memo.CaughtUp), so that a fan-out after a
//     restart asks once per source, not once per workload.
//
// Each waits at most memo.Lag's limit of reconciles in a row per workload;
// then the cache is taken as it is.
package lag
