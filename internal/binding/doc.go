// Package binding holds the ValueBinding reconciler (nudge.dev/v1alpha1):
// it keeps the bound fields of each binding's target equal to keys of
// Secrets and ConfigMaps in the binding's namespace, by server-side apply
// under the field manager "nudge", and writes each binding's status.
//
// Sources are read from nudge's source cache, which holds per-key SHA-256
// digests and never a value; a value is read with one GET of its Secret or
// ConfigMap when it is applied, and dropped after the call. Targets are read
// from a cache of their own, started per kind when some binding targets it
// and the API server serves it. Decide, the binding's decision, is pure.
package binding
