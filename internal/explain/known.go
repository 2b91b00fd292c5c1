package explain

import (
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fleet"
)

// knownAnnotation is a workload annotation of a dialect and what it selects.
type knownAnnotation struct {
	key     string
	dialect dialect.Dialect
	selects string
}

// known returns the workload annotations of every dialect, in the order
// dialect.Parse reads them.
func known() []knownAnnotation {
	return []knownAnnotation{
		{dialect.NudgeAuto, dialect.Nudge, "every ConfigMap and Secret the pod spec reads (\"false\": opted out)"},
		{dialect.NudgeConfigMaps, dialect.Nudge, "the ConfigMaps it names, read or not"},
		{dialect.NudgeSecrets, dialect.Nudge, "the Secrets it names, read or not"},
		{dialect.NudgeExcludeConfigMaps, dialect.Nudge, "never the ConfigMaps it names"},
		{dialect.NudgeExcludeSecrets, dialect.Nudge, "never the Secrets it names"},
		{dialect.NudgeConfigMapSelector, dialect.Nudge, "the ConfigMaps of its namespace whose labels it matches, as one set"},
		{dialect.NudgeSecretSelector, dialect.Nudge, "the Secrets of its namespace whose labels it matches, as one set"},
		{dialect.NudgeRolloutWindow, dialect.Nudge, "the rollout window of this workload"},
		{fleet.PriorityAnnotation, dialect.Nudge, "its turn for a rollout slot: higher first (--max-concurrent-rollouts)"},
		{fleet.HaltedAnnotation, dialect.Nudge, "holds it: a rollout of the same content failed (remove to resume)"},
		{dialect.ReloaderAuto, dialect.Reloader, "every ConfigMap and Secret the pod spec reads (\"false\": opted out)"},
		{dialect.ReloaderConfigMapAuto, dialect.Reloader, "every ConfigMap the pod spec reads"},
		{dialect.ReloaderSecretAuto, dialect.Reloader, "every Secret the pod spec reads"},
		{dialect.ReloaderConfigMapReload, dialect.Reloader, "the ConfigMaps whose names its anchored patterns match"},
		{dialect.ReloaderSecretReload, dialect.Reloader, "the Secrets whose names its anchored patterns match"},
		{dialect.ReloaderSearch, dialect.Reloader, "the sources the pod spec reads that carry " + dialect.ReloaderMatch},
		{dialect.ReloaderExcludeConfigMaps, dialect.Reloader, "never the ConfigMaps its patterns match"},
		{dialect.ReloaderExcludeSecrets, dialect.Reloader, "never the Secrets its patterns match"},
		{dialect.PodReloaderConfigMaps, dialect.PodReloader, "the ConfigMaps it names, read or not"},
		{dialect.PodReloaderSecrets, dialect.PodReloader, "the Secrets it names, read or not"},
		{dialect.WaveUpdateOnConfigChange, dialect.Wave, "every ConfigMap and Secret the pod spec reads"},
		{dialect.WaveExtraConfigMaps, dialect.Wave, "the ConfigMaps it names, read or not"},
		{dialect.WaveExtraSecrets, dialect.Wave, "the Secrets it names, read or not"},
	}
}

// annotations returns the dialect annotations of a workload: those of its
// metadata, then those of its pod template.
func annotations(meta, template map[string]string) []Annotation {
	var out []Annotation
	for _, place := range []struct {
		name   string
		values map[string]string
	}{{"metadata", meta}, {"template", template}} {
		for _, k := range known() {
			if v, ok := place.values[k.key]; ok {
				out = append(out, Annotation{Key: k.key, Value: v, Dialect: string(k.dialect), Place: place.name, Selects: k.selects})
			}
		}
	}
	return out
}
