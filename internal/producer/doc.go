// Package producer holds the producer-ready gate: what nudge knows of the
// object that writes a Secret (an External Secrets Operator ExternalSecret,
// a cert-manager Certificate), read from a cache of their metadata and
// status only, so that a change of the Secret rolls its workloads once its
// producer says it is done (its Ready condition True, its status caught up
// with its generation). Gate answers for one Secret and calls a hook with
// the Secret when its producer's state changes; it watches a producer kind
// only once the API serves it (internal/apidiscovery), and a producer it cannot
// see never holds a rollout.
package producer
