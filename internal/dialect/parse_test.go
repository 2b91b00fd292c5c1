package dialect

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/refs"
)

const ns = "shop"

// namedView is Named with Pattern as its expression, for comparison.
type namedView struct {
	Kind      refs.Kind
	Namespace string
	Name      string
	Pattern   string
	Dialect   Dialect
}

type specView struct {
	ConfigMaps, Secrets Selection
	Named, Exclude      []namedView
	Selectors           []string
	Window              *time.Duration
	Budget              *int
	Maintenance         string
	Paused              bool
	Evict               bool
	MaxUnavailable      int
	Dialects            []Dialect
}

func view(s Spec) specView {
	v := specView{ConfigMaps: s.ConfigMaps, Secrets: s.Secrets, Window: s.Window, Budget: s.Budget, Paused: s.Paused, Evict: s.Evict, MaxUnavailable: s.MaxUnavailable, Dialects: s.Dialects}
	if s.Maintenance != nil {
		v.Maintenance = "window " + s.Maintenance.String()
	}
	toView := func(in []Named) []namedView {
		var out []namedView
		for _, n := range in {
			nv := namedView{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, Dialect: n.Dialect}
			if n.Pattern != nil {
				nv.Pattern = n.Pattern.String()
			}
			out = append(out, nv)
		}
		return out
	}
	v.Named, v.Exclude = toView(s.Named), toView(s.Exclude)
	for _, sel := range s.Selectors {
		v.Selectors = append(v.Selectors, sel.Source().String())
	}
	return v
}

// name is a literal name entry.
func name(d Dialect, kind refs.Kind, namespace, n string) namedView {
	return namedView{Kind: kind, Namespace: namespace, Name: n, Dialect: d}
}

// pattern is a Reloader regular-expression entry in the workload's namespace.
func pattern(kind refs.Kind, entry string) namedView {
	return namedView{Kind: kind, Namespace: ns, Name: entry, Pattern: "^(?:" + entry + ")$", Dialect: Reloader}
}

func duration(d time.Duration) *time.Duration { return &d }

var (
	auto   = Selection{Auto: true}
	optOut = Selection{AutoOptOut: true}
	search = Selection{Search: true}
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		meta, template map[string]string
		want           specView
	}{
		"no annotations depend on nothing": {
			want: specView{},
		},
		"unrelated annotations depend on nothing": {
			meta:     map[string]string{"deployment.kubernetes.io/revision": "3"},
			template: map[string]string{"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"},
			want:     specView{},
		},

		// nudge.dev/*
		"nudge.dev/auto true selects every ConfigMap and Secret": {
			meta: map[string]string{NudgeAuto: "true"},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Nudge}},
		},
		"nudge.dev/auto false opts out of auto-reload-all": {
			meta: map[string]string{NudgeAuto: "false"},
			want: specView{ConfigMaps: optOut, Secrets: optOut, Dialects: []Dialect{Nudge}},
		},
		"booleans are read in any case with spaces trimmed": {
			meta: map[string]string{NudgeAuto: " TRUE "},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Nudge}},
		},
		"nudge.dev/configmap-selector and secret-selector choose sources by label, in canonical form": {
			meta: map[string]string{NudgeConfigMapSelector: " tier in (b, a), app=dash ", NudgeSecretSelector: "app.kubernetes.io/name==grafana,!legacy"},
			want: specView{Selectors: []string{"ConfigMapSelector/shop/app=dash,tier in (a,b)", "SecretSelector/shop/app.kubernetes.io/name==grafana,!legacy"},
				Dialects: []Dialect{Nudge}},
		},
		"a selector is read from the template when the metadata has no nudge.dev annotation": {
			meta:     map[string]string{ReloaderAuto: "true"},
			template: map[string]string{NudgeConfigMapSelector: "app=dash"},
			want: specView{ConfigMaps: auto, Secrets: auto, Selectors: []string{"ConfigMapSelector/shop/app=dash"},
				Dialects: []Dialect{Nudge, Reloader}},
		},
		"nudge.dev/configmaps and secrets name sources here or in another namespace": {
			meta: map[string]string{NudgeConfigMaps: "app, shared/ca-bundle", NudgeSecrets: "db"},
			want: specView{
				Named: []namedView{
					name(Nudge, refs.ConfigMap, "shared", "ca-bundle"),
					name(Nudge, refs.ConfigMap, ns, "app"),
					name(Nudge, refs.Secret, ns, "db"),
				},
				Dialects: []Dialect{Nudge},
			},
		},
		"nudge.dev/exclude lists are literal names": {
			meta: map[string]string{NudgeAuto: "true", NudgeExcludeConfigMaps: "debug.cfg", NudgeExcludeSecrets: "other/token"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude: []namedView{
					name(Nudge, refs.ConfigMap, ns, "debug.cfg"),
					name(Nudge, refs.Secret, "other", "token"),
				},
				Dialects: []Dialect{Nudge},
			},
		},
		"nudge.dev/rollout-window is a Go duration": {
			meta: map[string]string{NudgeRolloutWindow: "1m30s"},
			want: specView{Window: duration(90 * time.Second), Dialects: []Dialect{Nudge}},
		},
		"nudge.dev/max-rollouts-per-hour is a count, read on the metadata": {
			meta: map[string]string{NudgeMaxRolloutsPerHour: " 12 "},
			want: specView{Budget: ptr.To(12)},
		},
		"a zero budget of rollouts turns the storm brake off": {
			meta: map[string]string{NudgeMaxRolloutsPerHour: "0"},
			want: specView{Budget: ptr.To(0)},
		},
		"a budget of rollouts on the pod template is not read": {
			template: map[string]string{NudgeMaxRolloutsPerHour: "3"},
			want:     specView{},
		},
		"nudge.dev/maintenance-window is a schedule, a duration and a zone, read on the metadata": {
			meta: map[string]string{NudgeMaintenanceWindow: "0 2 * * 1-5  2h Europe/Berlin"},
			want: specView{Maintenance: "window 0 2 * * 1-5 2h Europe/Berlin"},
		},
		"a maintenance window on the pod template is not read": {
			template: map[string]string{NudgeMaintenanceWindow: "0 2 * * * 1h"},
			want:     specView{},
		},
		"nudge.dev/paused true pauses, read on the metadata": {
			meta: map[string]string{NudgePaused: "TRUE"},
			want: specView{Paused: true},
		},
		"nudge.dev/paused false pauses nothing": {
			meta: map[string]string{NudgePaused: "false"},
			want: specView{},
		},
		"a pause on the pod template is not read": {
			template: map[string]string{NudgePaused: "true"},
			want:     specView{},
		},
		"nudge.dev/rollout-strategy evict, with nudge.dev/max-unavailable, read on the metadata": {
			meta: map[string]string{NudgeRolloutStrategy: "evict", NudgeMaxUnavailable: " 2 "},
			want: specView{Evict: true, MaxUnavailable: 2},
		},
		"nudge.dev/rollout-strategy rollout evicts nothing": {
			meta: map[string]string{NudgeRolloutStrategy: "rollout"},
			want: specView{},
		},
		"a rollout strategy on the pod template is not read": {
			template: map[string]string{NudgeRolloutStrategy: "evict"},
			want:     specView{},
		},
		"a zero rollout window is allowed": {
			meta: map[string]string{NudgeRolloutWindow: "0s"},
			want: specView{Window: duration(0), Dialects: []Dialect{Nudge}},
		},
		"an empty list names nothing": {
			meta: map[string]string{NudgeConfigMaps: " , ,"},
			want: specView{Dialects: []Dialect{Nudge}},
		},

		// Reloader
		"reloader.stakater.com/auto true selects every ConfigMap and Secret": {
			meta: map[string]string{ReloaderAuto: "true"},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Reloader}},
		},
		"reloader.stakater.com/auto false opts out of auto-reload-all": {
			meta: map[string]string{ReloaderAuto: "false"},
			want: specView{ConfigMaps: optOut, Secrets: optOut, Dialects: []Dialect{Reloader}},
		},
		"configmap.reloader.stakater.com/auto selects ConfigMaps only": {
			meta: map[string]string{ReloaderConfigMapAuto: "true"},
			want: specView{ConfigMaps: auto, Dialects: []Dialect{Reloader}},
		},
		"secret.reloader.stakater.com/auto selects Secrets only": {
			meta: map[string]string{ReloaderSecretAuto: "true"},
			want: specView{Secrets: auto, Dialects: []Dialect{Reloader}},
		},
		"secret.reloader.stakater.com/auto false opts Secrets out only": {
			meta: map[string]string{ReloaderSecretAuto: "false"},
			want: specView{Secrets: optOut, Dialects: []Dialect{Reloader}},
		},
		"auto true with a typed auto false keeps that kind automatic": {
			meta: map[string]string{ReloaderAuto: "true", ReloaderConfigMapAuto: "false"},
			want: specView{ConfigMaps: Selection{Auto: true, AutoOptOut: true}, Secrets: auto, Dialects: []Dialect{Reloader}},
		},
		"configmap.reloader.stakater.com/reload entries are names or anchored patterns": {
			meta: map[string]string{ReloaderConfigMapReload: " app , app-.*,, my.cfg "},
			want: specView{
				Named: []namedView{
					name(Reloader, refs.ConfigMap, ns, "app"),
					pattern(refs.ConfigMap, "app-.*"),
					pattern(refs.ConfigMap, "my.cfg"),
				},
				Dialects: []Dialect{Reloader},
			},
		},
		"secret.reloader.stakater.com/reload entries are names or anchored patterns": {
			meta: map[string]string{ReloaderSecretReload: "db,tls-(a|b)"},
			want: specView{
				Named:    []namedView{name(Reloader, refs.Secret, ns, "db"), pattern(refs.Secret, "tls-(a|b)")},
				Dialects: []Dialect{Reloader},
			},
		},
		"reloader.stakater.com/search true searches both kinds": {
			meta: map[string]string{ReloaderSearch: "true"},
			want: specView{ConfigMaps: search, Secrets: search, Dialects: []Dialect{Reloader}},
		},
		"reloader.stakater.com/search false searches nothing": {
			meta: map[string]string{ReloaderSearch: "false"},
			want: specView{Dialects: []Dialect{Reloader}},
		},
		"Reloader exclude lists are names or anchored patterns": {
			meta: map[string]string{ReloaderAuto: "true", ReloaderExcludeConfigMaps: "debug, tmp-.*", ReloaderExcludeSecrets: "token"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude: []namedView{
					name(Reloader, refs.ConfigMap, ns, "debug"),
					pattern(refs.ConfigMap, "tmp-.*"),
					name(Reloader, refs.Secret, ns, "token"),
				},
				Dialects: []Dialect{Reloader},
			},
		},

		// pod-reloader
		"pod-reloader lists name sources in the workload's namespace, trimmed": {
			meta: map[string]string{PodReloaderConfigMaps: " my-configmap ", PodReloaderSecrets: "my-secret,my-other-secret"},
			want: specView{
				Named: []namedView{
					name(PodReloader, refs.ConfigMap, ns, "my-configmap"),
					name(PodReloader, refs.Secret, ns, "my-other-secret"),
					name(PodReloader, refs.Secret, ns, "my-secret"),
				},
				Dialects: []Dialect{PodReloader},
			},
		},

		// Wave
		"wave update-on-config-change true selects every ConfigMap and Secret": {
			meta: map[string]string{WaveUpdateOnConfigChange: "true"},
			want: specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Wave}},
		},
		"wave update-on-config-change false opts out of auto-reload-all": {
			meta: map[string]string{WaveUpdateOnConfigChange: "false"},
			want: specView{ConfigMaps: optOut, Secrets: optOut, Dialects: []Dialect{Wave}},
		},
		"wave extra lists name sources here or in another namespace": {
			meta: map[string]string{WaveExtraConfigMaps: "app,some-namespace/shared", WaveExtraSecrets: "vault/token"},
			want: specView{
				Named: []namedView{
					name(Wave, refs.ConfigMap, ns, "app"),
					name(Wave, refs.ConfigMap, "some-namespace", "shared"),
					name(Wave, refs.Secret, "vault", "token"),
				},
				Dialects: []Dialect{Wave},
			},
		},

		// Where annotations are read from.
		"annotations on the pod template are read when the metadata has none": {
			template: map[string]string{ReloaderAuto: "true", NudgeRolloutWindow: "10s", PodReloaderSecrets: "db", WaveExtraConfigMaps: "app"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Named:    []namedView{name(Wave, refs.ConfigMap, ns, "app"), name(PodReloader, refs.Secret, ns, "db")},
				Window:   duration(10 * time.Second),
				Dialects: []Dialect{Nudge, PodReloader, Reloader, Wave},
			},
		},
		"a dialect in the metadata hides that dialect's template annotations": {
			meta:     map[string]string{NudgeRolloutWindow: "10s", WaveExtraSecrets: "a"},
			template: map[string]string{NudgeAuto: "true", WaveUpdateOnConfigChange: "true"},
			want: specView{
				Named:    []namedView{name(Wave, refs.Secret, ns, "a")},
				Window:   duration(10 * time.Second),
				Dialects: []Dialect{Nudge, Wave},
			},
		},
		"each dialect falls back on its own": {
			meta:     map[string]string{ReloaderAuto: "true"},
			template: map[string]string{ReloaderSecretReload: "ignored", WaveExtraSecrets: "extra"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Named:    []namedView{name(Wave, refs.Secret, ns, "extra")},
				Dialects: []Dialect{Reloader, Wave},
			},
		},
		"Reloader falls back per kind as Reloader does": {
			meta:     map[string]string{ReloaderConfigMapReload: "app"},
			template: map[string]string{ReloaderAuto: "true"},
			want: specView{
				Secrets:  auto,
				Named:    []namedView{name(Reloader, refs.ConfigMap, ns, "app")},
				Dialects: []Dialect{Reloader},
			},
		},
		"a Reloader exclude in the metadata does not stop the fallback": {
			meta:     map[string]string{ReloaderExcludeConfigMaps: "debug"},
			template: map[string]string{ReloaderAuto: "true"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude:  []namedView{name(Reloader, refs.ConfigMap, ns, "debug")},
				Dialects: []Dialect{Reloader},
			},
		},
		"a Reloader exclude on the template is read with the kind it excludes from": {
			template: map[string]string{ReloaderAuto: "true", ReloaderExcludeSecrets: "token"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude:  []namedView{name(Reloader, refs.Secret, ns, "token")},
				Dialects: []Dialect{Reloader},
			},
		},
		"a Reloader exclude on the template is ignored when the metadata selects that kind": {
			meta:     map[string]string{ReloaderAuto: "true"},
			template: map[string]string{ReloaderExcludeSecrets: "token"},
			want:     specView{ConfigMaps: auto, Secrets: auto, Dialects: []Dialect{Reloader}},
		},
		"a Reloader exclude in the metadata wins over one on the template": {
			meta:     map[string]string{ReloaderExcludeSecrets: "meta"},
			template: map[string]string{ReloaderAuto: "true", ReloaderExcludeSecrets: "template"},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Exclude:  []namedView{name(Reloader, refs.Secret, ns, "meta")},
				Dialects: []Dialect{Reloader},
			},
		},

		// Union.
		"dialects on one workload are united": {
			meta: map[string]string{
				NudgeSecrets:             "shared/ca",
				ReloaderConfigMapAuto:    "true",
				ReloaderSecretReload:     "db-.*",
				PodReloaderConfigMaps:    "flags",
				WaveUpdateOnConfigChange: "true",
				WaveExtraSecrets:         "token",
			},
			want: specView{
				ConfigMaps: auto, Secrets: auto,
				Named: []namedView{
					name(PodReloader, refs.ConfigMap, ns, "flags"),
					name(Nudge, refs.Secret, "shared", "ca"),
					pattern(refs.Secret, "db-.*"),
					name(Wave, refs.Secret, ns, "token"),
				},
				Dialects: []Dialect{Nudge, PodReloader, Reloader, Wave},
			},
		},
		"a source named twice in one list is listed once, named by two dialects twice": {
			meta: map[string]string{NudgeConfigMaps: "app,app,shop/app", PodReloaderConfigMaps: "app"},
			want: specView{
				Named: []namedView{
					name(Nudge, refs.ConfigMap, ns, "app"),
					name(PodReloader, refs.ConfigMap, ns, "app"),
				},
				Dialects: []Dialect{Nudge, PodReloader},
			},
		},
		"an explicit false and a true from another dialect give auto and opt-out": {
			meta: map[string]string{NudgeAuto: "false", ReloaderAuto: "true"},
			want: specView{
				ConfigMaps: Selection{Auto: true, AutoOptOut: true},
				Secrets:    Selection{Auto: true, AutoOptOut: true},
				Dialects:   []Dialect{Nudge, Reloader},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			spec, errs := Parse(ns, tc.meta, tc.template)
			g.Expect(errs).To(BeEmpty())
			g.Expect(view(spec)).To(Equal(tc.want))
		})
	}
}
