// Package sources holds what nudge reads of its sources: the digests a
// cached ConfigMap or Secret carries in place of its values (the cache
// transform, trim.Sources, writes them; Digests reads them), the index
// from a source to the workloads that may reference it (a
// SecretProviderClassPodStatus standing for its SecretProviderClass, see
// package csi), and the recorder of their content changes of the last
// minute (Changes, kept in a Recent map).
package sources
