package dialect

import (
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
)

// renamed are Reloader names as an installation with every annotation flag
// set (--auto-annotation=acme.io/auto, ...) has them.
var renamed = ReloaderNames{
	Auto: "acme.io/auto", ConfigMapAuto: "acme.io/cm-auto", SecretAuto: "acme.io/secret-auto",
	ConfigMapReload: "acme.io/cm-reload", SecretReload: "acme.io/secret-reload",
	ConfigMapExclude: "acme.io/cm-exclude", SecretExclude: "acme.io/secret-exclude",
	Search: "acme.io/search", Match: "acme.io/match", Ignore: "acme.io/ignore",
	PausePeriod: "acme.io/pause", PausedAt: "acme.io/paused-at",
}

// TestParseRenamed: with Reloader's annotation flags set, the renamed
// annotations mean what the default ones did, and the default names mean
// nothing any more (as in Reloader, which reads only the configured name).
func TestParseRenamed(t *testing.T) {
	p := NewParser(renamed)
	tests := map[string]struct {
		meta map[string]string
		want specView
	}{
		"the renamed auto annotation selects both kinds": {
			meta: map[string]string{"acme.io/auto": "true"},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Reloader}},
		},
		"the renamed typed auto annotations select their kind": {
			meta: map[string]string{"acme.io/cm-auto": "true", "acme.io/secret-auto": "false"},
			want: specView{ConfigMaps: auto, Secrets: Selection{AutoOptOut: true}, Dialects: []Dialect{Reloader}},
		},
		"the renamed reload and exclude lists name sources": {
			meta: map[string]string{"acme.io/cm-reload": "app", "acme.io/secret-reload": "db",
				"acme.io/cm-exclude": "old", "acme.io/secret-exclude": "older"},
			want: specView{
				Named:    []namedView{name(Reloader, refs.ConfigMap, ns, "app"), name(Reloader, refs.Secret, ns, "db")},
				Exclude:  []namedView{name(Reloader, refs.ConfigMap, ns, "old"), name(Reloader, refs.Secret, ns, "older")},
				Dialects: []Dialect{Reloader},
			},
		},
		"the renamed search annotation turns on search mode": {
			meta: map[string]string{"acme.io/search": "true"},
			want: specView{ConfigMaps: Selection{Search: true}, Secrets: Selection{Search: true}, Dialects: []Dialect{Reloader}},
		},
		"the default names are no longer read": {
			meta: map[string]string{ReloaderAuto: "true", ReloaderConfigMapReload: "app", ReloaderSearch: "true"},
			want: specView{},
		},
		"the other dialects keep their names": {
			meta: map[string]string{NudgeAuto: "true"},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Nudge}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s, errs := p.Parse(ns, tc.meta, nil)
			g.Expect(errs).To(BeEmpty())
			g.Expect(view(s)).To(Equal(tc.want))
		})
	}
}

// TestSourceMarksRenamed: --ignore-annotation and --search-match-annotation
// rename what a source is marked with; nudge.dev/ignore stays.
func TestSourceMarksRenamed(t *testing.T) {
	p := NewParser(renamed)
	tests := map[string]struct {
		annotations      map[string]string
		ignored, matched bool
	}{
		"the renamed ignore annotation ignores":       {annotations: map[string]string{"acme.io/ignore": "true"}, ignored: true},
		"the default ignore annotation does not":      {annotations: map[string]string{ReloaderIgnore: "true"}},
		"nudge's own ignore annotation still ignores": {annotations: map[string]string{NudgeIgnore: "true"}, ignored: true},
		"the renamed match annotation matches":        {annotations: map[string]string{"acme.io/match": "true"}, matched: true},
		"the default match annotation does not":       {annotations: map[string]string{ReloaderMatch: "true"}},
		"a source without marks is neither":           {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(p.Ignored(tc.annotations)).To(Equal(tc.ignored))
			g.Expect(p.Matched(tc.annotations)).To(Equal(tc.matched))
		})
	}
	g := NewWithT(t)
	g.Expect(p.SourceAnnotations()).To(ConsistOf(NudgeIgnore, "acme.io/ignore", "acme.io/match", NudgeUrgent, NudgePaused))
	g.Expect(Parser{}.SourceAnnotations()).To(ConsistOf(NudgeIgnore, ReloaderIgnore, ReloaderMatch, NudgeUrgent, NudgePaused))
}

// TestCountsUsesParsedNames: a Spec parsed with renamed names asks the
// renamed marks of a source.
func TestCountsUsesParsedNames(t *testing.T) {
	g := NewWithT(t)
	s, _ := NewParser(renamed).Parse(ns, map[string]string{"acme.io/search": "true"}, nil)
	src := refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: "app"}
	g.Expect(s.Counts(src, map[string]string{"acme.io/match": "true"}, true, false)).To(BeTrue())
	g.Expect(s.Counts(src, map[string]string{ReloaderMatch: "true"}, true, false)).To(BeFalse())
	s, _ = NewParser(renamed).Parse(ns, map[string]string{"acme.io/auto": "true"}, nil)
	g.Expect(s.Counts(src, map[string]string{"acme.io/ignore": "true"}, true, false)).To(BeFalse())
	g.Expect(s.Counts(src, map[string]string{ReloaderIgnore: "true"}, true, false)).To(BeTrue())
}

// TestNewParserKeepsDefaultsForEmptyNames: a name left empty keeps Reloader's
// default.
func TestNewParserKeepsDefaultsForEmptyNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NewParser(ReloaderNames{}).Reloader()).To(Equal(DefaultReloaderNames()))
	g.Expect(NewParser(ReloaderNames{Auto: "acme.io/auto"}).Reloader().SecretAuto).To(Equal(ReloaderSecretAuto))
	g.Expect(Parser{}.Reloader()).To(Equal(DefaultReloaderNames()))
}
