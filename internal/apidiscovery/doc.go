// Package apidiscovery holds the wait for the API server to serve a kind: Kinds
// sets up what needs a kind (Argo Rollouts, a custom kind, the Secrets Store
// CSI driver's pod statuses, ValueBindings) at once when API discovery lists
// it, otherwise once a metadata-only watch of CustomResourceDefinitions and
// APIServices (or, for a namespaced install, a poll of discovery) sees it
// served, so that nudge needs no restart when such a kind is installed after
// it.
package apidiscovery
