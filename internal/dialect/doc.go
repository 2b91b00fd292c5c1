// Package dialect holds the annotation dialects nudge reads, and their
// parser: the annotations by which a workload says which ConfigMaps and
// Secrets it depends on (Parse → Spec), and those by which a source is
// ignored or matched, in nudge's own (nudge.dev/*), Stakater Reloader's
// (https://github.com/stakater/Reloader#how-to-use-reloader), SAP
// pod-reloader's (https://github.com/SAP/pod-reloader) and Wave's
// (https://github.com/wave-k8s/wave). Where dialects meet on one workload,
// their references are united.
//
// It is pure: no API calls, no clock, no mutable package state.
package dialect
