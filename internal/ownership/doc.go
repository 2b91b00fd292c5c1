// Package ownership tells who owns the state nudge writes on a workload:
// a state written back by another field manager (a GitOps tool applying an
// exported manifest), read from the workload's managedFields, and the
// contest between two nudges with different keys that both write one
// workload.
package ownership
