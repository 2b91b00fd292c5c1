package workload

import (
	"encoding/json"
	"strings"
	"time"

	"nudge.dev/nudge/internal/refs"
)

// LastReloadedFromAnnotation is Reloader's record, on the pod template, of
// the source that caused the last rollout; nudge writes it with its trigger
// for workloads Reloader's annotations select, as Reloader writes it with
// its annotations strategy (internal/pkg/handler/upgrade.go,
// createReloadedAnnotations, and pkg/common/reload_source.go of
// https://github.com/stakater/Reloader, 1.4).
const LastReloadedFromAnnotation = "reloader.stakater.com/last-reloaded-from"

// ReloadSource is the value of LastReloadedFromAnnotation, in Reloader's
// JSON shape (its common.ReloadSource): informational, never read back.
type ReloadSource struct {
	// Type is the source's kind as Reloader names it: "CONFIGMAP", "SECRET"
	// or "SECRETPROVIDERCLASS".
	Type      string `json:"type"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Hash is, unlike Reloader's unkeyed SHA of the data, the source's keyed
	// digest (fingerprint.Key), so a reader of the workload cannot test a
	// guess of a Secret.
	Hash string `json:"hash"`
	// ContainerRefs names the container that uses the source (the first
	// one for a source only an annotation names), as Reloader's does.
	ContainerRefs []string `json:"containerRefs"`
	// ObservedAt is the time of the rollout, in Unix seconds.
	ObservedAt int64 `json:"observedAt"`
}

// NewReloadSource returns the ReloadSource of src, of keyed digest digest,
// used by container, for a rollout at at.
func NewReloadSource(src refs.Source, digest, container string, at time.Time) ReloadSource {
	return ReloadSource{
		Type:          strings.ToUpper(string(src.Kind)),
		Name:          src.Name,
		Namespace:     src.Namespace,
		Hash:          digest,
		ContainerRefs: []string{container},
		ObservedAt:    at.Unix(),
	}
}

// String returns s as the annotation's JSON value.
func (s ReloadSource) String() string {
	b, _ := json.Marshal(s) // strings, a slice of strings and an int: never fails
	return string(b)
}
