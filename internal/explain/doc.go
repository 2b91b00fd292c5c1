// Package explain answers, with the user's own permissions, why nudge rolls
// or does not roll a workload (Workload) and which workloads a ConfigMap or
// Secret would roll if it changed (Source). It reuses nudge's own reference
// resolution (resolve.Resolver), fingerprint and decision (rollout.Decide)
// over the API instead of the cache, so its answer is the reconciler's.
//
// Its reports are plain structs, printed as a table (Print*) or, wrapped in
// an object of kind Explanation (ToObject), as JSON or YAML by cli-runtime's
// printers.
package explain
