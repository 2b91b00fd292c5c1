// Package app holds the wiring of the nudge controller: Run builds the
// manager and its caches, sets up the reconcilers of each workload kind and
// the optional features (value bindings, the admission webhook, Secrets Store
// CSI, shards) from options.Options, and runs them until the context ends.
//
// It decides nothing and keeps nothing of a workload: the reconciler is in
// internal/controller, the plumbing of watches in internal/watch, Events in
// internal/record, the key in internal/fingerprint and metrics in
// internal/metrics. Only cmd/nudge, hack/ and internal/nudgetest import it.
package app
