package workload

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Change is one write to a workload, rendered by Patch as a single JSON
// merge patch (RFC 7386) guarded by the resourceVersion it was computed from,
// so a write based on a stale read fails with a conflict instead of
// overwriting a newer object.
type Change struct {
	ResourceVersion string
	// Labels and Annotations are set on the object's metadata; a nil value
	// removes the key.
	Labels, Annotations map[string]*string
	// TemplateAnnotations are set on the pod template's metadata.
	TemplateAnnotations map[string]string
	// Containers, when not nil, replace the pod template's containers (the
	// env-vars strategy; safe because of the resourceVersion guard).
	Containers []corev1.Container
	// Spec fields are set at the top of the object's spec (e.g. "paused",
	// "restartAt"); a nil value removes the field.
	Spec map[string]any
}

// Patch renders c for kind k. It returns an error only if a value cannot be
// encoded as JSON.
func (c Change) Patch(k Kind) ([]byte, error) {
	meta := map[string]any{"resourceVersion": c.ResourceVersion}
	if len(c.Labels) > 0 {
		meta["labels"] = c.Labels
	}
	if len(c.Annotations) > 0 {
		meta["annotations"] = c.Annotations
	}
	doc := map[string]any{"metadata": meta}
	spec := map[string]any{}
	for key, v := range c.Spec {
		spec[key] = v
	}
	tmpl := map[string]any{}
	if len(c.TemplateAnnotations) > 0 {
		tmpl["metadata"] = map[string]any{"annotations": c.TemplateAnnotations}
	}
	if c.Containers != nil {
		tmpl["spec"] = map[string]any{"containers": c.Containers}
	}
	if len(tmpl) > 0 {
		path := k.TemplatePath() // starts with "spec"
		node := tmpl
		for i := len(path) - 1; i > 1; i-- {
			node = map[string]any{path[i]: node}
		}
		spec[path[1]] = node
	}
	if len(spec) > 0 {
		doc["spec"] = spec
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding patch for %s: %w", k.Name(), err)
	}
	return b, nil
}
