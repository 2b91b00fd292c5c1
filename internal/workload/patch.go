package workload

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ErrNoTemplate is returned by Change.Patch when a change of containers is
// asked of a kind without a pod template.
var ErrNoTemplate = errors.New("the kind has no pod template")

// Change is one write to a workload, rendered by Patch as a single JSON
// merge patch (RFC 7386) guarded by the resourceVersion it was computed from,
// so a write based on a stale read fails with a conflict instead of
// overwriting a newer object.
type Change struct {
	ResourceVersion string
	// Labels and Annotations are set on the object's metadata; a nil value
	// removes the key.
	Labels, Annotations map[string]*string
	// TemplateAnnotations are the trigger: set in the annotations map at the
	// kind's trigger path (the pod template's, for every built-in kind).
	TemplateAnnotations map[string]string
	// Containers, when not nil, replace the pod template's containers (the
	// env-vars strategy; safe because of the resourceVersion guard).
	Containers []corev1.Container
	// Spec fields are set at the top of the object's spec (e.g. "paused",
	// "restartAt"); a nil value removes the field.
	Spec map[string]any
}

// Patch renders c for kind k. It returns an error if a value cannot be
// encoded as JSON, or ErrNoTemplate for containers of a kind without a pod
// template.
func (c Change) Patch(k Kind) ([]byte, error) {
	doc := map[string]any{}
	merge(doc, []string{"metadata"}, map[string]any{"resourceVersion": c.ResourceVersion})
	merge(doc, []string{"metadata", "labels"}, c.Labels)
	merge(doc, []string{"metadata", "annotations"}, c.Annotations)
	merge(doc, []string{"spec"}, c.Spec)
	merge(doc, k.TriggerPath(), c.TemplateAnnotations)
	if c.Containers != nil {
		if len(k.TemplatePath()) == 0 {
			return nil, fmt.Errorf("writing containers to %s: %w", k.Name(), ErrNoTemplate)
		}
		merge(doc, append(append([]string(nil), k.TemplatePath()...), "spec"), map[string]any{"containers": c.Containers})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding patch for %s: %w", k.Name(), err)
	}
	return b, nil
}

// merge sets the entries of values in the object at path in doc, creating
// the objects on the way and keeping the entries already there (the trigger
// path may be the object's own annotations). An empty values adds nothing.
func merge[V any](doc map[string]any, path []string, values map[string]V) {
	if len(values) == 0 {
		return
	}
	node := doc
	for _, p := range path {
		next, ok := node[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[p] = next
		}
		node = next
	}
	for key, v := range values {
		node[key] = v
	}
}
