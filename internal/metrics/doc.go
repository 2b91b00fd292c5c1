// Package metrics holds nudge's Prometheus metrics and, beside them,
// Reloader's. Their names are API; nudge's labels never name an object.
package metrics
