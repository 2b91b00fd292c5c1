package dialect

import (
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
)

// A Parser that denies cross-namespace references puts the sources named
// in another namespace in Refused, with no error, and leaves everything else
// as the default Parser reads it.
func TestParseCrossNamespace(t *testing.T) {
	tests := map[string]struct {
		allow          bool
		meta           map[string]string
		named, refused []namedView
		enabled        bool
	}{
		"allowed: another namespace's source is named, as Wave reads it": {
			allow:   true,
			meta:    map[string]string{WaveExtraConfigMaps: "other/ca, app"},
			named:   []namedView{name(Wave, refs.ConfigMap, "other", "ca"), name(Wave, refs.ConfigMap, ns, "app")},
			enabled: true,
		},
		"denied: another namespace's source is refused, the workload's own named": {
			meta:    map[string]string{WaveExtraConfigMaps: "other/ca, app", NudgeSecrets: "other/db"},
			named:   []namedView{name(Wave, refs.ConfigMap, ns, "app")},
			refused: []namedView{name(Wave, refs.ConfigMap, "other", "ca"), name(Nudge, refs.Secret, "other", "db")},
			enabled: true,
		},
		"denied: the workload's own namespace written out is no other namespace": {
			meta:    map[string]string{NudgeConfigMaps: ns + "/app"},
			named:   []namedView{name(Nudge, refs.ConfigMap, ns, "app")},
			enabled: true,
		},
		"denied: a workload naming only refused sources still opts in, to be told": {
			meta:    map[string]string{WaveExtraSecrets: "other/db"},
			refused: []namedView{name(Wave, refs.Secret, "other", "db")},
			enabled: true,
		},
		"denied: a refused entry named by two dialects is refused once per dialect, sorted": {
			meta:    map[string]string{NudgeConfigMaps: "other/ca", WaveExtraConfigMaps: "other/ca"},
			refused: []namedView{name(Nudge, refs.ConfigMap, "other", "ca"), name(Wave, refs.ConfigMap, "other", "ca")},
			enabled: true,
		},
		"denied: an exclude entry of another namespace is kept: it takes nothing": {
			meta:    map[string]string{NudgeAuto: "true", NudgeExcludeConfigMaps: "other/ca"},
			enabled: true,
		},
		"denied: pod-reloader's and Reloader's lists are in the workload's namespace already": {
			meta:    map[string]string{PodReloaderConfigMaps: "app", ReloaderConfigMapReload: "cfg"},
			named:   []namedView{name(PodReloader, refs.ConfigMap, ns, "app"), name(Reloader, refs.ConfigMap, ns, "cfg")},
			enabled: true,
		},
	}
	for title, tc := range tests {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parser{}.WithCrossNamespace(tc.allow).Parse(ns, tc.meta, nil)
			g.Expect(errs).To(BeEmpty(), "a refusal is no malformed annotation")
			v := view(spec)
			g.Expect(v.Named).To(Equal(tc.named))
			g.Expect(view(Spec{Named: spec.Refused}).Named).To(Equal(tc.refused))
			g.Expect(spec.Enabled(false)).To(Equal(tc.enabled))
			for _, n := range spec.Refused {
				g.Expect(spec.Counts(refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}, nil, false, true)).To(BeFalse(),
					"a refused source never counts")
			}
		})
	}
}

// The zero Parser allows cross-namespace references: nudge's behaviour
// before --cross-namespace-references, and Wave's.
func TestZeroParserAllowsCrossNamespace(t *testing.T) {
	g := NewWithT(t)
	spec, _ := Parser{}.Parse(ns, map[string]string{NudgeConfigMaps: "other/ca"}, nil)
	g.Expect(spec.Refused).To(BeEmpty())
	g.Expect(view(spec).Named).To(Equal([]namedView{name(Nudge, refs.ConfigMap, "other", "ca")}))
}
