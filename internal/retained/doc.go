// Package retained holds the cache transforms of workloads: of each object in
// nudge's informer caches they keep what the reconciler and the source index
// read (the metadata nudge reads, the pod template's annotations and
// references), so that a cache of 25,000 Deployments stays small.
package retained
