package dialect

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/refs"
)

func TestParseMalformed(t *testing.T) {
	tests := map[string]struct {
		meta, template map[string]string
		want           specView
		wantErrs       []string
	}{
		"a bad nudge.dev/auto is an error and ignored": {
			meta:     map[string]string{NudgeAuto: "yes", NudgeConfigMaps: "app"},
			want:     specView{Named: []namedView{name(Nudge, refs.ConfigMap, ns, "app")}, Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/auto" in the workload metadata: want "true" or "false", got "yes"`},
		},
		"a bad selector is an error and ignored; the rest of the workload counts": {
			meta: map[string]string{NudgeConfigMapSelector: "app in (dash", NudgeSecretSelector: "app=db", NudgeConfigMaps: "app"},
			want: specView{Named: []namedView{name(Nudge, refs.ConfigMap, ns, "app")}, Selectors: []string{"SecretSelector/shop/app=db"},
				Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/configmap-selector" in the workload metadata: invalid label selector "app in (dash": ` +
				`unable to parse requirement: found '', expected: ',' or ')'`},
		},
		"an empty selector is an error: it would match every source": {
			meta: map[string]string{NudgeSecretSelector: " "},
			want: specView{Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/secret-selector" in the workload metadata: invalid label selector " ": ` +
				`empty; it would match every source of the namespace, write a requirement such as "app=dash"`},
		},
		"a bad reloader.stakater.com/auto is an error, reported once for both kinds": {
			template: map[string]string{ReloaderAuto: "1"},
			want:     specView{Dialects: []Dialect{Reloader}},
			wantErrs: []string{`annotation "reloader.stakater.com/auto" in the pod template: want "true" or "false", got "1"`},
		},
		"bad typed auto annotations are errors": {
			meta: map[string]string{ReloaderConfigMapAuto: "on", ReloaderSecretAuto: ""},
			want: specView{Dialects: []Dialect{Reloader}},
			wantErrs: []string{
				`annotation "configmap.reloader.stakater.com/auto" in the workload metadata: want "true" or "false", got "on"`,
				`annotation "secret.reloader.stakater.com/auto" in the workload metadata: want "true" or "false", got ""`,
			},
		},
		"a bad reloader.stakater.com/search is an error and ignored": {
			meta:     map[string]string{ReloaderSearch: "enabled"},
			want:     specView{Dialects: []Dialect{Reloader}},
			wantErrs: []string{`annotation "reloader.stakater.com/search" in the workload metadata: want "true" or "false", got "enabled"`},
		},
		"a bad wave update-on-config-change is an error and ignored": {
			meta:     map[string]string{WaveUpdateOnConfigChange: "yes please"},
			want:     specView{Dialects: []Dialect{Wave}},
			wantErrs: []string{`annotation "wave.pusher.com/update-on-config-change" in the workload metadata: want "true" or "false", got "yes please"`},
		},
		"bad entries of a reload list are errors in one annotation error and skipped": {
			meta: map[string]string{ReloaderConfigMapReload: "ok,a(,Bad_Name"},
			want: specView{Named: []namedView{name(Reloader, refs.ConfigMap, ns, "ok")}, Dialects: []Dialect{Reloader}},
			wantErrs: []string{
				`annotation "configmap.reloader.stakater.com/reload" in the workload metadata: ` +
					"invalid regular expression \"a(\": error parsing regexp: missing closing ): `a(`; " +
					`invalid name "Bad_Name": not a lowercase RFC 1123 subdomain, so it matches nothing`,
			},
		},
		"a reload entry cannot escape its anchors": {
			meta: map[string]string{ReloaderSecretReload: "a)|(b"},
			want: specView{Dialects: []Dialect{Reloader}},
			wantErrs: []string{
				`annotation "secret.reloader.stakater.com/reload" in the workload metadata: ` +
					"invalid regular expression \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`",
			},
		},
		"a bad exclude entry is an error and skipped": {
			meta: map[string]string{ReloaderAuto: "true", ReloaderExcludeSecrets: "[, token"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude:  []namedView{name(Reloader, refs.Secret, ns, "token")},
				Dialects: []Dialect{Reloader},
			},
			wantErrs: []string{
				`annotation "secrets.exclude.reloader.stakater.com/reload" in the workload metadata: ` +
					"invalid regular expression \"[\": error parsing regexp: missing closing ]: `[`",
			},
		},
		"bad names in a nudge.dev list are errors and skipped": {
			meta: map[string]string{NudgeConfigMaps: "good, Bad, a/b/c, BAD/x, /x, other/good"},
			want: specView{
				Named: []namedView{
					name(Nudge, refs.ConfigMap, "other", "good"),
					name(Nudge, refs.ConfigMap, ns, "good"),
				},
				Dialects: []Dialect{Nudge},
			},
			wantErrs: []string{
				`annotation "nudge.dev/configmaps" in the workload metadata: ` +
					`invalid name "Bad": not a lowercase RFC 1123 subdomain; ` +
					`invalid name "a/b/c": not a lowercase RFC 1123 subdomain; ` +
					`invalid name "BAD/x": namespace is not a lowercase RFC 1123 label; ` +
					`invalid name "/x": namespace is not a lowercase RFC 1123 label`,
			},
		},
		"a bad name in a nudge.dev exclude list is an error": {
			meta:     map[string]string{NudgeExcludeSecrets: "my_secret"},
			want:     specView{Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/exclude-secrets" in the workload metadata: invalid name "my_secret": not a lowercase RFC 1123 subdomain`},
		},
		"pod-reloader names cannot be in another namespace": {
			meta:     map[string]string{PodReloaderSecrets: "other/db"},
			want:     specView{Dialects: []Dialect{PodReloader}},
			wantErrs: []string{`annotation "pod-reloader.cs.sap.com/secrets" in the workload metadata: invalid name "other/db": not a lowercase RFC 1123 subdomain`},
		},
		"a bad name in a wave extra list is an error": {
			template: map[string]string{WaveExtraConfigMaps: "ok,Not/Ok"},
			want:     specView{Named: []namedView{name(Wave, refs.ConfigMap, ns, "ok")}, Dialects: []Dialect{Wave}},
			wantErrs: []string{`annotation "wave.pusher.com/extra-configmaps" in the pod template: invalid name "Not/Ok": namespace is not a lowercase RFC 1123 label`},
		},
		"a rollout window that is not a duration is an error and ignored": {
			meta:     map[string]string{NudgeRolloutWindow: "5 minutes"},
			want:     specView{Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/rollout-window" in the workload metadata: invalid duration "5 minutes": not a Go duration such as "30s" or "2m"`},
		},
		"a negative rollout window is an error and ignored": {
			meta:     map[string]string{NudgeRolloutWindow: "-1s"},
			want:     specView{Dialects: []Dialect{Nudge}},
			wantErrs: []string{`annotation "nudge.dev/rollout-window" in the workload metadata: invalid duration "-1s": negative`},
		},
		"a budget of rollouts that is no count is an error and ignored": {
			meta:     map[string]string{NudgeMaxRolloutsPerHour: "lots"},
			want:     specView{},
			wantErrs: []string{`annotation "nudge.dev/max-rollouts-per-hour" in the workload metadata: invalid number "lots": want a whole number of rollouts, 0 or more`},
		},
		"a negative budget of rollouts is an error and ignored": {
			meta:     map[string]string{NudgeMaxRolloutsPerHour: "-3"},
			want:     specView{},
			wantErrs: []string{`annotation "nudge.dev/max-rollouts-per-hour" in the workload metadata: invalid number "-3": want a whole number of rollouts, 0 or more`},
		},
		"a malformed maintenance window is an error, and the workload has none": {
			meta: map[string]string{NudgeMaintenanceWindow: "0 2 * * 2h"},
			want: specView{Maintenance: "window "},
			wantErrs: []string{`annotation "nudge.dev/maintenance-window" in the workload metadata: invalid maintenance window "0 2 * * 2h": ` +
				`got 5 fields, want a schedule of 5 (minute hour day-of-month month day-of-week) or a descriptor (@daily), a duration and an optional time zone; the workload counts as having none of its own`},
		},
		"a malformed pause is an error, and the workload is not paused": {
			meta:     map[string]string{NudgePaused: "yes"},
			want:     specView{},
			wantErrs: []string{`annotation "nudge.dev/paused" in the workload metadata: want "true" or "false", got "yes"`},
		},
		"errors come one per annotation in dialect order": {
			meta: map[string]string{WaveUpdateOnConfigChange: "x", ReloaderSearch: "x", NudgeAuto: "x", PodReloaderConfigMaps: "X"},
			want: specView{Dialects: []Dialect{Nudge, PodReloader, Reloader, Wave}},
			wantErrs: []string{
				`annotation "nudge.dev/auto" in the workload metadata: want "true" or "false", got "x"`,
				`annotation "reloader.stakater.com/search" in the workload metadata: want "true" or "false", got "x"`,
				`annotation "pod-reloader.cs.sap.com/configmaps" in the workload metadata: invalid name "X": not a lowercase RFC 1123 subdomain`,
				`annotation "wave.pusher.com/update-on-config-change" in the workload metadata: want "true" or "false", got "x"`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parse(ns, tc.meta, tc.template)
			g.Expect(view(spec)).To(Equal(tc.want))
			msgs := make([]string, len(errs))
			for i, err := range errs {
				msgs[i] = err.Error()
			}
			g.Expect(msgs).To(Equal(tc.wantErrs))
		})
	}
}

func TestParseErrorsWrapSentinels(t *testing.T) {
	tests := map[string]struct {
		annotations    map[string]string
		wantAnnotation string
		want           []error
	}{
		"a bad boolean is ErrNotBool": {
			annotations:    map[string]string{ReloaderAuto: "maybe"},
			wantAnnotation: ReloaderAuto,
			want:           []error{ErrNotBool},
		},
		"a bad regular expression is ErrBadPattern": {
			annotations:    map[string]string{ReloaderConfigMapReload: "("},
			wantAnnotation: ReloaderConfigMapReload,
			want:           []error{ErrBadPattern},
		},
		"a bad name is ErrBadName": {
			annotations:    map[string]string{WaveExtraSecrets: "a/b/c"},
			wantAnnotation: WaveExtraSecrets,
			want:           []error{ErrBadName},
		},
		"a bad duration is ErrBadDuration": {
			annotations:    map[string]string{NudgeRolloutWindow: "soon"},
			wantAnnotation: NudgeRolloutWindow,
			want:           []error{ErrBadDuration},
		},
		"a bad selector is ErrBadSelector": {
			annotations:    map[string]string{NudgeConfigMapSelector: "a b"},
			wantAnnotation: NudgeConfigMapSelector,
			want:           []error{ErrBadSelector},
		},
		"a rollout strategy nudge does not know is ErrBadStrategy": {
			annotations:    map[string]string{NudgeRolloutStrategy: "restart"},
			wantAnnotation: NudgeRolloutStrategy,
			want:           []error{ErrBadStrategy},
		},
		"a max-unavailable of 0 is ErrBadNumber": {
			annotations:    map[string]string{NudgeMaxUnavailable: "0"},
			wantAnnotation: NudgeMaxUnavailable,
			want:           []error{ErrBadNumber},
		},
		"several bad entries wrap each sentinel": {
			annotations:    map[string]string{ReloaderSecretReload: "(,Bad"},
			wantAnnotation: ReloaderSecretReload,
			want:           []error{ErrBadPattern, ErrBadName},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, errs := Parse(ns, tc.annotations, nil)
			g.Expect(errs).To(HaveLen(1))
			err := errs[0]
			var ae *AnnotationError
			g.Expect(errors.As(err, &ae)).To(BeTrue())
			g.Expect(ae.Annotation).To(Equal(tc.wantAnnotation))
			g.Expect(ae.Template).To(BeFalse())
			g.Expect(err).To(MatchError(ErrMalformed))
			for _, sentinel := range tc.want {
				g.Expect(err).To(MatchError(sentinel))
			}
		})
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	g := NewWithT(t)
	g.Expect(errors.Is(ErrBadName, ErrBadPattern)).To(BeFalse())
	g.Expect(errors.Is(ErrMalformed, ErrBadName)).To(BeFalse())
	g.Expect(errors.Is(ErrBadDuration, ErrMalformed)).To(BeTrue())
}
