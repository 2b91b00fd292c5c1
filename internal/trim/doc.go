// Package trim holds the transforms of nudge's informer caches: of each
// object they keep what nudge reads and nothing else, so that a cache of
// 25,000 Deployments stays small and no cache holds a source's value.
// Workload and Workloads trim workloads (the metadata nudge reads, the pod
// template's annotations and references); Sources replaces a ConfigMap's
// or Secret's values with their digests; PodStatus keeps of a Secrets
// Store CSI SecretProviderClassPodStatus what csi.PodStatus reads;
// BindingTarget trims the targets of ValueBindings in their own cache.
//
// Two transforms live elsewhere, each bound to a packed form its package
// alone reads: producer.Trim, of the producer gate's own cache, and
// fleet.KeepProgress, which wraps Workloads to keep what a wave reads.
package trim
