package dialect

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/refs"
)

func cmSource(namespace, name string) refs.Source {
	return refs.Source{Kind: refs.ConfigMap, Namespace: namespace, Name: name}
}

func secretSource(namespace, name string) refs.Source {
	return refs.Source{Kind: refs.Secret, Namespace: namespace, Name: name}
}

func TestNamedMatches(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		source      refs.Source
		want        bool
	}{
		"a plain name matches itself": {
			annotations: map[string]string{ReloaderConfigMapReload: "app"},
			source:      cmSource(ns, "app"),
			want:        true,
		},
		"a plain name does not match a longer name": {
			annotations: map[string]string{ReloaderConfigMapReload: "app"},
			source:      cmSource(ns, "app-2"),
			want:        false,
		},
		"a plain name does not match a name that ends with it": {
			annotations: map[string]string{ReloaderConfigMapReload: "app"},
			source:      cmSource(ns, "my-app"),
			want:        false,
		},
		"a pattern matches a name it covers": {
			annotations: map[string]string{ReloaderConfigMapReload: "app-.*"},
			source:      cmSource(ns, "app-2"),
			want:        true,
		},
		"a pattern is anchored at the start": {
			annotations: map[string]string{ReloaderConfigMapReload: "app-.*"},
			source:      cmSource(ns, "my-app-2"),
			want:        false,
		},
		"a name with a dot is a pattern, as in Reloader, and matches any character there": {
			annotations: map[string]string{ReloaderConfigMapReload: "my.cfg"},
			source:      cmSource(ns, "myXcfg"),
			want:        true,
		},
		"a name with a dot still matches itself": {
			annotations: map[string]string{ReloaderConfigMapReload: "my.cfg"},
			source:      cmSource(ns, "my.cfg"),
			want:        true,
		},
		"an alternation is anchored as a whole": {
			annotations: map[string]string{ReloaderSecretReload: "a|b"},
			source:      secretSource(ns, "abc"),
			want:        false,
		},
		"an alternation matches each alternative": {
			annotations: map[string]string{ReloaderSecretReload: "a|b"},
			source:      secretSource(ns, "b"),
			want:        true,
		},
		"a name does not match another namespace": {
			annotations: map[string]string{ReloaderConfigMapReload: "app"},
			source:      cmSource("other", "app"),
			want:        false,
		},
		"a pattern does not match another namespace": {
			annotations: map[string]string{ReloaderConfigMapReload: "app.*"},
			source:      cmSource("other", "app"),
			want:        false,
		},
		"a ConfigMap name does not match a Secret": {
			annotations: map[string]string{ReloaderConfigMapReload: "app"},
			source:      secretSource(ns, "app"),
			want:        false,
		},
		"a cross-namespace Wave name matches in its namespace": {
			annotations: map[string]string{WaveExtraSecrets: "vault/token"},
			source:      secretSource("vault", "token"),
			want:        true,
		},
		"a cross-namespace Wave name does not match in the workload's namespace": {
			annotations: map[string]string{WaveExtraSecrets: "vault/token"},
			source:      secretSource(ns, "token"),
			want:        false,
		},
		"a nudge.dev name with a dot is literal": {
			annotations: map[string]string{NudgeConfigMaps: "my.cfg"},
			source:      cmSource(ns, "myXcfg"),
			want:        false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parse(ns, tc.annotations, nil)
			g.Expect(errs).To(BeEmpty())
			g.Expect(spec.Named).To(HaveLen(1))
			g.Expect(spec.Named[0].Matches(tc.source)).To(Equal(tc.want))
		})
	}
}

func TestLiteralEntriesHaveNoPattern(t *testing.T) {
	tests := map[string]struct {
		entry       string
		wantPattern bool
	}{
		"a plain name is literal":                 {entry: "app-1", wantPattern: false},
		"a name with a dot is a pattern":          {entry: "my.cfg", wantPattern: true},
		"a name with a star is a pattern":         {entry: "app-*", wantPattern: true},
		"a character class is a pattern":          {entry: "app-[0-9]", wantPattern: true},
		"an escaped dot is a pattern, not a name": {entry: `my\.cfg`, wantPattern: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parse(ns, map[string]string{ReloaderConfigMapReload: tc.entry}, nil)
			g.Expect(errs).To(BeEmpty())
			g.Expect(spec.Named).To(HaveLen(1))
			g.Expect(spec.Named[0].Pattern != nil).To(Equal(tc.wantPattern))
			g.Expect(spec.Named[0].Name).To(Equal(tc.entry))
		})
	}
}

func TestSelectionAutomatic(t *testing.T) {
	tests := map[string]struct {
		sel           Selection
		autoReloadAll bool
		want          bool
	}{
		"no annotation is not automatic":                   {sel: Selection{}, want: false},
		"no annotation is automatic with auto-reload-all":  {sel: Selection{}, autoReloadAll: true, want: true},
		"auto is automatic":                                {sel: Selection{Auto: true}, want: true},
		"an opt-out is not automatic with auto-reload-all": {sel: Selection{AutoOptOut: true}, autoReloadAll: true, want: false},
		"auto beats an opt-out from another annotation":    {sel: Selection{Auto: true, AutoOptOut: true}, autoReloadAll: true, want: true},
		"search alone is not automatic":                    {sel: Selection{Search: true}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.sel.Automatic(tc.autoReloadAll)).To(Equal(tc.want))
		})
	}
}

func TestSpecEnabled(t *testing.T) {
	tests := map[string]struct {
		annotations   map[string]string
		autoReloadAll bool
		want          bool
	}{
		"no annotations enable nothing":                   {want: false},
		"no annotations with auto-reload-all are enabled": {autoReloadAll: true, want: true},
		"auto false with auto-reload-all is not enabled": {
			annotations: map[string]string{ReloaderAuto: "false"}, autoReloadAll: true, want: false,
		},
		"a typed auto false with auto-reload-all leaves the other kind enabled": {
			annotations: map[string]string{ReloaderSecretAuto: "false"}, autoReloadAll: true, want: true,
		},
		"a typed auto enables":          {annotations: map[string]string{ReloaderConfigMapAuto: "true"}, want: true},
		"search enables":                {annotations: map[string]string{ReloaderSearch: "true"}, want: true},
		"a named source enables":        {annotations: map[string]string{PodReloaderSecrets: "db"}, want: true},
		"a window alone does not":       {annotations: map[string]string{NudgeRolloutWindow: "1m"}, want: false},
		"an exclude alone does not":     {annotations: map[string]string{NudgeExcludeSecrets: "db"}, want: false},
		"a malformed auto does not":     {annotations: map[string]string{NudgeAuto: "on"}, want: false},
		"a label selector enables":      {annotations: map[string]string{NudgeSecretSelector: "app=db"}, want: true},
		"a malformed selector does not": {annotations: map[string]string{NudgeConfigMapSelector: "app in ("}, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, _ := Parse(ns, tc.annotations, nil)
			g.Expect(spec.Enabled(tc.autoReloadAll)).To(Equal(tc.want))
		})
	}
}

func TestSpecFor(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{ConfigMaps: Selection{Auto: true}, Secrets: Selection{Search: true}}
	g.Expect(spec.For(refs.ConfigMap)).To(Equal(Selection{Auto: true}))
	g.Expect(spec.For(refs.Secret)).To(Equal(Selection{Search: true}))
	g.Expect(spec.For("SecretProviderClassPodStatus")).To(Equal(Selection{}))
}

func TestSpecCounts(t *testing.T) {
	matched := map[string]string{ReloaderMatch: "true"}
	tests := map[string]struct {
		annotations   map[string]string
		source        refs.Source
		sourceAnn     map[string]string
		inPodSpec     bool
		autoReloadAll bool
		want          bool
	}{
		"auto counts a source the pod spec uses": {
			annotations: map[string]string{ReloaderAuto: "true"},
			source:      cmSource(ns, "app"), inPodSpec: true, want: true,
		},
		"auto does not count a source the pod spec does not use": {
			annotations: map[string]string{ReloaderAuto: "true"},
			source:      cmSource(ns, "app"), inPodSpec: false, want: false,
		},
		"a typed auto counts only its kind": {
			annotations: map[string]string{ReloaderConfigMapAuto: "true"},
			source:      secretSource(ns, "db"), inPodSpec: true, want: false,
		},
		"a named source counts though the pod spec does not use it": {
			annotations: map[string]string{ReloaderSecretReload: "db-.*"},
			source:      secretSource(ns, "db-main"), inPodSpec: false, want: true,
		},
		"a named workload without auto does not count other pod spec sources": {
			annotations: map[string]string{ReloaderSecretReload: "db"},
			source:      secretSource(ns, "other"), inPodSpec: true, want: false,
		},
		"search counts a matched source the pod spec uses": {
			annotations: map[string]string{ReloaderSearch: "true"},
			source:      cmSource(ns, "app"), sourceAnn: matched, inPodSpec: true, want: true,
		},
		"search does not count an unmatched source": {
			annotations: map[string]string{ReloaderSearch: "true"},
			source:      cmSource(ns, "app"), inPodSpec: true, want: false,
		},
		"search does not count a matched source the pod spec does not use": {
			annotations: map[string]string{ReloaderSearch: "true"},
			source:      cmSource(ns, "app"), sourceAnn: matched, inPodSpec: false, want: false,
		},
		"an excluded source does not count for auto": {
			annotations: map[string]string{ReloaderAuto: "true", ReloaderExcludeConfigMaps: "debug-.*"},
			source:      cmSource(ns, "debug-1"), inPodSpec: true, want: false,
		},
		"an excluded source does not count when named, as in Reloader": {
			annotations: map[string]string{ReloaderConfigMapReload: "app-.*", ReloaderExcludeConfigMaps: "app-debug"},
			source:      cmSource(ns, "app-debug"), inPodSpec: true, want: false,
		},
		"an exclusion names one namespace": {
			annotations: map[string]string{NudgeSecrets: "other/db", NudgeExcludeSecrets: "db"},
			source:      secretSource("other", "db"), want: true,
		},
		"an ignored source never counts": {
			annotations: map[string]string{NudgeConfigMaps: "app"},
			source:      cmSource(ns, "app"), sourceAnn: map[string]string{NudgeIgnore: "true"}, inPodSpec: true, want: false,
		},
		"auto-reload-all counts pod spec sources of a workload without annotations": {
			source: secretSource(ns, "db"), inPodSpec: true, autoReloadAll: true, want: true,
		},
		"auto-reload-all does not count for an opted-out workload": {
			annotations: map[string]string{NudgeAuto: "false"},
			source:      secretSource(ns, "db"), inPodSpec: true, autoReloadAll: true, want: false,
		},
		"a cross-namespace named source counts": {
			annotations: map[string]string{WaveExtraConfigMaps: "shared/ca"},
			source:      cmSource("shared", "ca"), want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parse(ns, tc.annotations, nil)
			g.Expect(errs).To(BeEmpty())
			g.Expect(spec.Counts(tc.source, tc.sourceAnn, tc.inPodSpec, tc.autoReloadAll)).To(Equal(tc.want))
		})
	}
}

func TestSelectedMatches(t *testing.T) {
	sel, err := ParseSelector("app=dash,!legacy")
	if err != nil {
		t.Fatal(err)
	}
	s := Selected{Kind: refs.ConfigMap, Namespace: ns, Selector: sel}
	tests := map[string]struct {
		src    refs.Source
		labels map[string]string
		want   bool
	}{
		"a ConfigMap of the namespace with the labels is in the set": {
			src: refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: "a"}, labels: map[string]string{"app": "dash", "x": "y"}, want: true},
		"a ConfigMap without them is not": {
			src: refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: "a"}, labels: map[string]string{"app": "shop"}},
		"a ConfigMap the selector excludes is not": {
			src: refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: "a"}, labels: map[string]string{"app": "dash", "legacy": ""}},
		"a ConfigMap of another namespace is not": {
			src: refs.Source{Kind: refs.ConfigMap, Namespace: "other", Name: "a"}, labels: map[string]string{"app": "dash"}},
		"a Secret is not": {
			src: refs.Source{Kind: refs.Secret, Namespace: ns, Name: "a"}, labels: map[string]string{"app": "dash"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(s.Matches(tc.src, labels.Set(tc.labels))).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(s.Source()).To(Equal(refs.Source{Kind: refs.ConfigMapSelector, Namespace: ns, Name: "app=dash,!legacy"}))
}
