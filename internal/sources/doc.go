// Package sources holds what nudge reads of its sources: the cache
// transform that replaces a ConfigMap's or Secret's values with their
// digests, the Secrets Store CSI driver's SecretProviderClassPodStatuses,
// and the index from a source to the workloads that may reference it.
package sources
