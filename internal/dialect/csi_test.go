package dialect

import (
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
)

// TestParseSecretProviderClasses pins how Reloader's annotations select
// Secrets Store CSI SecretProviderClasses, with Reloader's default names and
// renamed ones (--secretproviderclass-*-annotation).
func TestParseSecretProviderClasses(t *testing.T) {
	const spc = refs.SecretProviderClass
	renamed := NewParser(ReloaderNames{
		SecretProviderClassAuto:    "csi.example.com/auto",
		SecretProviderClassReload:  "csi.example.com/reload",
		SecretProviderClassExclude: "csi.example.com/exclude",
	})
	tests := map[string]struct {
		parser           Parser
		meta, template   map[string]string
		want             Selection
		named, excluded  []namedView
		secrets, cfgMaps Selection
		enabled          bool
	}{
		"reloader.stakater.com/auto covers SecretProviderClasses as in Reloader": {
			meta: map[string]string{ReloaderAuto: "true"},
			want: auto, secrets: auto, cfgMaps: auto, enabled: true,
		},
		"nudge.dev/auto covers SecretProviderClasses": {
			meta: map[string]string{NudgeAuto: "true"},
			want: auto, secrets: auto, cfgMaps: auto, enabled: true,
		},
		"the typed auto annotation covers SecretProviderClasses only": {
			meta: map[string]string{ReloaderSecretProviderClassAuto: "true"},
			want: auto, enabled: true,
		},
		"the typed auto annotation false opts out of auto-reload-all": {
			meta: map[string]string{ReloaderSecretProviderClassAuto: "false"},
			want: optOut,
		},
		"search covers SecretProviderClasses": {
			meta: map[string]string{ReloaderSearch: "true"},
			want: search, secrets: search, cfgMaps: search, enabled: true,
		},
		"the reload annotation names classes, plain or as patterns": {
			meta:    map[string]string{ReloaderSecretProviderClassReload: "vault-db, azure-.*"},
			named:   []namedView{pattern(spc, "azure-.*"), name(Reloader, spc, ns, "vault-db")},
			enabled: true,
		},
		"the exclude annotation excludes classes": {
			meta: map[string]string{ReloaderAuto: "true", ReloaderExcludeSecretProviderClasses: "vault-db"},
			want: auto, secrets: auto, cfgMaps: auto, enabled: true,
			excluded: []namedView{name(Reloader, spc, ns, "vault-db")},
		},
		"the annotations are read from the pod template when the metadata has none": {
			template: map[string]string{ReloaderSecretProviderClassAuto: "true"},
			want:     auto, enabled: true,
		},
		"the Secret annotations do not select SecretProviderClasses": {
			meta:    map[string]string{ReloaderSecretAuto: "true", ReloaderSecretReload: "vault-db"},
			secrets: auto, enabled: true,
			named: []namedView{name(Reloader, refs.Secret, ns, "vault-db")},
		},
		"renamed annotations are read under their new names": {
			parser: renamed,
			meta:   map[string]string{"csi.example.com/auto": "true", "csi.example.com/reload": "a", "csi.example.com/exclude": "b"},
			want:   auto, enabled: true,
			named:    []namedView{name(Reloader, spc, ns, "a")},
			excluded: []namedView{name(Reloader, spc, ns, "b")},
		},
		"default names are not read once renamed": {
			parser: renamed,
			meta:   map[string]string{ReloaderSecretProviderClassAuto: "true", ReloaderSecretProviderClassReload: "a"},
		},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := tc.parser.Parse(ns, tc.meta, tc.template)
			g.Expect(errs).To(BeEmpty())
			v := view(spec)
			g.Expect(spec.SecretProviderClasses).To(Equal(tc.want))
			g.Expect(spec.For(spc)).To(Equal(tc.want))
			g.Expect(v.Secrets).To(Equal(tc.secrets))
			g.Expect(v.ConfigMaps).To(Equal(tc.cfgMaps))
			g.Expect(v.Named).To(Equal(tc.named))
			g.Expect(v.Exclude).To(Equal(tc.excluded))
			g.Expect(spec.Enabled(false)).To(Equal(tc.enabled))
		})
	}
}
