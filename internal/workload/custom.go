package workload

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// CustomKind is one entry of the custom kinds file (--custom-kinds-file, the
// chart value customKinds): a kind nudge handles like its built-in ones. In
// YAML:
//
//   - apiVersion: serving.knative.dev/v1
//     kind: Service
//     resource: services          # optional here; the chart's RBAC needs it
//     templatePath: spec.template # where the pod template is; omit if none
//     triggerPath: spec.template.metadata.annotations # the default
//     triggerAnnotation: ""       # optional; see TriggerAnnotation
type CustomKind struct {
	// APIVersion is the kind's group and version, e.g. "keda.sh/v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Kind is the kind's name, e.g. "ScaledJob".
	Kind string `json:"kind"`
	// Resource is the kind's plural resource name, e.g. "scaledjobs". nudge
	// finds it by API discovery and only logs when it differs; the chart
	// renders its RBAC from it.
	Resource string `json:"resource,omitempty"`
	// TemplatePath is the dotted path of the pod template, e.g.
	// "spec.jobTargetRef.template". Without one, only sources named by
	// annotations on the object count (auto mode finds none).
	TemplatePath string `json:"templatePath,omitempty"`
	// TriggerPath is the dotted path of the annotations map nudge writes its
	// trigger into; "<TemplatePath>.metadata.annotations" when empty, and
	// required without a TemplatePath (e.g. Prometheus Operator's
	// "spec.podMetadata.annotations").
	TriggerPath string `json:"triggerPath,omitempty"`
	// TriggerAnnotation, when set, is an annotation in the trigger path that
	// nudge sets to the rollout time (RFC 3339) besides its own, for a
	// controller that acts only on a change of it: Flux's
	// "reconcile.fluxcd.io/requestedAt" with a triggerPath
	// "metadata.annotations"
	// (https://fluxcd.io/flux/components/helm/helmreleases/).
	TriggerAnnotation string `json:"triggerAnnotation,omitempty"`
}

// GroupVersionKind returns the kind's group, version and kind; the zero
// value when APIVersion does not parse.
func (c CustomKind) GroupVersionKind() schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(c.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	return gv.WithKind(c.Kind)
}

// Adapter returns the Kind for c, whose resource API discovery named plural
// (c.Resource when plural is ""). c must be valid (see ParseCustomKinds).
func (c CustomKind) Adapter(plural string) Kind {
	if plural == "" {
		plural = c.Resource
	}
	k := &unstructuredKind{gvk: c.GroupVersionKind(), plural: plural, path: dotted(c.TemplatePath),
		trigger: dotted(c.TriggerPath), annotation: c.TriggerAnnotation}
	if len(k.trigger) == 0 {
		k.trigger = triggerOf(k.path)
	}
	return k
}

// String names c as in error messages: "keda.sh/v1alpha1 ScaledJob".
func (c CustomKind) String() string { return c.APIVersion + " " + c.Kind }

// ReadCustomKinds reads and checks the custom kinds file at path (see
// ParseCustomKinds); no file ("") is no custom kind.
func ReadCustomKinds(path string) ([]CustomKind, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --custom-kinds-file: %w", err)
	}
	kinds, err := ParseCustomKinds(data)
	if err != nil {
		return nil, fmt.Errorf("--custom-kinds-file %s: %w", path, err)
	}
	return kinds, nil
}

// builtinGVKs are the kinds nudge handles without configuration.
var builtinGVKs = []schema.GroupKind{
	{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"},
	{Group: "batch", Kind: "CronJob"}, {Group: "batch", Kind: "Job"}, RolloutGVK.GroupKind(),
}

// ParseCustomKinds decodes a YAML (or JSON) list of CustomKind, refusing
// unknown fields, and returns every problem of every entry, joined: a
// missing apiVersion or kind, a built-in or repeated kind, a path with an
// empty segment or into metadata or status, a missing triggerPath without a
// templatePath, a resource that is not a lower-case DNS label.
func ParseCustomKinds(data []byte) ([]CustomKind, error) {
	var kinds []CustomKind
	if err := yaml.UnmarshalStrict(data, &kinds); err != nil {
		return nil, fmt.Errorf("decoding the custom kinds: %w", err)
	}
	var errs []error
	seen := map[schema.GroupKind]bool{}
	for i, c := range kinds {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("custom kind %d (%s): %s", i+1, c, fmt.Sprintf(format, args...)))
		}
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		switch {
		case c.APIVersion == "" || c.Kind == "":
			bad("apiVersion and kind are required")
		case err != nil || gv.Version == "":
			bad("apiVersion %q is not group/version", c.APIVersion)
		case slices.Contains(builtinGVKs, gv.WithKind(c.Kind).GroupKind()):
			bad("nudge handles this kind already")
		case seen[gv.WithKind(c.Kind).GroupKind()]:
			bad("listed twice")
		}
		seen[gv.WithKind(c.Kind).GroupKind()] = true
		if c.Resource != "" {
			if msgs := validation.IsDNS1123Label(c.Resource); len(msgs) > 0 {
				bad("resource %q: %s", c.Resource, strings.Join(msgs, "; "))
			}
		}
		if err := checkPath(c.TemplatePath, false); err != nil {
			bad("templatePath %q: %v", c.TemplatePath, err)
		}
		if err := checkPath(c.TriggerPath, true); err != nil {
			bad("triggerPath %q: %v", c.TriggerPath, err)
		}
		if c.TriggerAnnotation != "" {
			if msgs := validation.IsQualifiedName(c.TriggerAnnotation); len(msgs) > 0 {
				bad("triggerAnnotation %q: %s", c.TriggerAnnotation, strings.Join(msgs, "; "))
			}
		}
		if c.TemplatePath == "" && c.TriggerPath == "" {
			bad("triggerPath is required without a templatePath")
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return kinds, nil
}

// checkPath checks a dotted path: no empty segment, and not into the
// object's status or metadata; a trigger may be the metadata's annotations
// (Flux's reconcile request).
func checkPath(p string, trigger bool) error {
	if p == "" {
		return nil
	}
	segs := strings.Split(p, ".")
	if slices.Contains(segs, "") {
		return errors.New("has an empty segment")
	}
	switch {
	case segs[0] == "status":
		return errors.New("is in the status, which nudge does not write")
	case segs[0] == "metadata" && (!trigger || p != "metadata.annotations"):
		return errors.New(`is in the metadata: only a triggerPath "metadata.annotations" may be`)
	case segs[0] == "apiVersion" || segs[0] == "kind":
		return errors.New("is not an object")
	}
	return nil
}

// dotted splits a dotted path; nil for "".
func dotted(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
