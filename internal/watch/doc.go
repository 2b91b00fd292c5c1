// Package watch holds the plumbing between nudge's informers and its
// reconcilers: the work queue each workload controller runs on, the kind
// source that feeds it from a shared informer, the informer fan-out that
// lets many handlers share one informer's events, and the waits for caches
// to sync.
package watch
