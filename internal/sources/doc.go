// Package sources holds what nudge reads of its sources: the cache
// transform that replaces a ConfigMap's or Secret's values with their
// digests, the index from a source to the workloads that may reference it
// (a SecretProviderClassPodStatus standing for its SecretProviderClass, see
// package csi), and the recorder of their content changes of the last
// minute (Changes, kept in a Recent map).
package sources
