// Package eviction holds the restart of pods a pod-template change cannot
// reach (a StatefulSet or DaemonSet with updateStrategy OnDelete, the pods an
// operator's custom resource owns directly) through the Eviction API: the
// pure plan of which pods to evict now (Plan), the progress kept in the
// owner's metadata (Progress, ProgressAnnotation), and the API's part: the
// pods of an owner read by a LIST of its selector (PodsOf) and one eviction,
// refused by a PodDisruptionBudget or not (Evict).
//
// It never deletes a pod: an eviction is the only way out, so a
// PodDisruptionBudget is always kept.
package eviction
