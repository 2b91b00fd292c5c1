package dialect

// Native annotations, on the workload (metadata, or the pod template when the
// metadata has none of them).
const (
	// NudgeAuto "true" makes every ConfigMap and Secret the pod spec uses
	// count; "false" opts the workload out of --auto-reload-all.
	NudgeAuto = "nudge.dev/auto"
	// NudgeConfigMaps is a comma-separated list of ConfigMaps, each "name"
	// (the workload's namespace) or "namespace/name", that count whether or
	// not the pod spec uses them.
	NudgeConfigMaps = "nudge.dev/configmaps"
	// NudgeSecrets is NudgeConfigMaps for Secrets.
	NudgeSecrets = "nudge.dev/secrets"
	// NudgeExcludeConfigMaps is a comma-separated list of ConfigMaps, "name"
	// or "namespace/name", that never count for the workload.
	NudgeExcludeConfigMaps = "nudge.dev/exclude-configmaps"
	// NudgeExcludeSecrets is NudgeExcludeConfigMaps for Secrets.
	NudgeExcludeSecrets = "nudge.dev/exclude-secrets"
	// NudgeRolloutWindow is a Go duration (time.ParseDuration, >= 0): further
	// changes within it after a rollout fold into one trailing rollout. It
	// may lengthen --rollout-window, shorten it only with
	// --allow-workload-overrides.
	NudgeRolloutWindow = "nudge.dev/rollout-window"
	// NudgeIgnore "true" on a ConfigMap or Secret makes it count for no
	// workload.
	NudgeIgnore = "nudge.dev/ignore"
	// NudgeUrgent "true" on a ConfigMap or Secret makes a change of it roll
	// its workloads outside their maintenance window.
	NudgeUrgent = "nudge.dev/urgent"
)

// Native annotations that choose a workload's sources by their labels, as
// the k8s-sidecar pattern loads Grafana dashboards (Reloader's #1196).
const (
	// NudgeConfigMapSelector is a label selector in kubectl's syntax
	// (labels.Parse: "app=dash", "tier in (a,b),!legacy"): every ConfigMap
	// of the workload's namespace it matches counts, as one set. When one
	// is created, changed or deleted, or labelled into or out of the set,
	// the workload rolls once (see Selected).
	NudgeConfigMapSelector = "nudge.dev/configmap-selector"
	// NudgeSecretSelector is NudgeConfigMapSelector for Secrets.
	NudgeSecretSelector = "nudge.dev/secret-selector"
)

// Native annotations on the workload's metadata (never its pod template)
// that pace its rollouts.
const (
	// NudgeMaxRolloutsPerHour is a non-negative integer: the storm brake's
	// budget of rollouts in a sliding hour; 0 sets none. It may lower
	// --max-rollouts-per-hour; raise it, or set none, only with
	// --allow-workload-overrides.
	NudgeMaxRolloutsPerHour = "nudge.dev/max-rollouts-per-hour"
	// NudgeMaintenanceWindow is a maintenance window (maintenance.Parse's
	// format: a 5-field cron schedule, a duration and an optional IANA time
	// zone): rollouts wait for it to open. On a Namespace it sets the window
	// of its workloads. It narrows --maintenance-window (and a workload's
	// narrows its Namespace's): all must be open; with
	// --allow-workload-overrides a workload's replaces its Namespace's,
	// which replaces the flag's.
	NudgeMaintenanceWindow = "nudge.dev/maintenance-window"
	// NudgePaused "true" holds the rollouts of the workload that carries
	// it, of every workload of a Namespace that carries it, or, on a
	// ConfigMap or Secret, those its own changes would make. The changes
	// stay pending, not forgotten: lifting it ("false" or removed) rolls
	// each held workload once, with the content as it is then. Any value
	// but "true" or "false" (in any case) is malformed and pauses nothing.
	NudgePaused = "nudge.dev/paused"
)

// Native annotations on the workload's metadata that restart its pods
// through the Eviction API (package eviction), for the pods a pod-template
// change cannot reach.
const (
	// NudgeRolloutStrategy "evict" makes a rollout also evict, one at a
	// time, the pods that started before it, keeping their
	// PodDisruptionBudget: the native form of Reloader's rollout-strategy.
	// "rollout", the default, only changes the pod template.
	NudgeRolloutStrategy = "nudge.dev/rollout-strategy"
	// NudgeMaxUnavailable is a whole number, 1 or more: how many pods the
	// restart may evict before their replacements are Ready (default 1).
	NudgeMaxUnavailable = "nudge.dev/max-unavailable"
)

// Stakater Reloader's annotations, with Reloader's default names; see
// https://github.com/stakater/Reloader#how-to-use-reloader.
const (
	// ReloaderAuto "true" makes every ConfigMap and Secret the pod spec uses
	// count; "false" opts the workload out of --auto-reload-all.
	ReloaderAuto = "reloader.stakater.com/auto"
	// ReloaderConfigMapAuto is ReloaderAuto for ConfigMaps only.
	ReloaderConfigMapAuto = "configmap.reloader.stakater.com/auto"
	// ReloaderSecretAuto is ReloaderAuto for Secrets only.
	ReloaderSecretAuto = "secret.reloader.stakater.com/auto"
	// ReloaderConfigMapReload is a comma-separated list of ConfigMap names in
	// the workload's namespace, each an anchored regular expression.
	ReloaderConfigMapReload = "configmap.reloader.stakater.com/reload"
	// ReloaderSecretReload is ReloaderConfigMapReload for Secrets.
	ReloaderSecretReload = "secret.reloader.stakater.com/reload"
	// ReloaderSearch "true" makes the pod spec's sources count only when
	// they carry ReloaderMatch "true".
	ReloaderSearch = "reloader.stakater.com/search"
	// ReloaderMatch "true" on a ConfigMap or Secret marks it for workloads
	// in search mode.
	ReloaderMatch = "reloader.stakater.com/match"
	// ReloaderIgnore "true" on a ConfigMap or Secret makes it count for no
	// workload.
	ReloaderIgnore = "reloader.stakater.com/ignore"
	// ReloaderExcludeConfigMaps is a comma-separated list of ConfigMap names,
	// read like ReloaderConfigMapReload, that never count for the workload.
	ReloaderExcludeConfigMaps = "configmaps.exclude.reloader.stakater.com/reload"
	// ReloaderExcludeSecrets is ReloaderExcludeConfigMaps for Secrets.
	ReloaderExcludeSecrets = "secrets.exclude.reloader.stakater.com/reload"
)

// Stakater Reloader's annotations for Secrets Store CSI SecretProviderClasses,
// read with its --enable-csi-integration; see
// https://github.com/stakater/Reloader#secretproviderclass-csi-integration.
// reloader.stakater.com/auto and reloader.stakater.com/search cover
// SecretProviderClasses as they cover ConfigMaps and Secrets.
const (
	// ReloaderSecretProviderClassAuto is ReloaderAuto for the
	// SecretProviderClasses the pod spec mounts only.
	ReloaderSecretProviderClassAuto = "secretproviderclass.reloader.stakater.com/auto"
	// ReloaderSecretProviderClassReload is ReloaderConfigMapReload for
	// SecretProviderClasses.
	ReloaderSecretProviderClassReload = "secretproviderclass.reloader.stakater.com/reload"
	// ReloaderExcludeSecretProviderClasses is ReloaderExcludeConfigMaps for
	// SecretProviderClasses.
	ReloaderExcludeSecretProviderClasses = "secretproviderclasses.exclude.reloader.stakater.com/reload"
)

// SAP pod-reloader's annotations; see https://github.com/SAP/pod-reloader.
const (
	// PodReloaderConfigMaps is a comma-separated list of ConfigMap names in
	// the workload's namespace.
	PodReloaderConfigMaps = "pod-reloader.cs.sap.com/configmaps"
	// PodReloaderSecrets is PodReloaderConfigMaps for Secrets.
	PodReloaderSecrets = "pod-reloader.cs.sap.com/secrets"
)

// Wave's annotations; see https://github.com/wave-k8s/wave.
const (
	// WaveUpdateOnConfigChange "true" makes every ConfigMap and Secret the
	// pod spec uses count.
	WaveUpdateOnConfigChange = "wave.pusher.com/update-on-config-change"
	// WaveExtraConfigMaps is a comma-separated list of ConfigMaps, "name" or
	// "namespace/name", that count whether or not the pod spec uses them.
	WaveExtraConfigMaps = "wave.pusher.com/extra-configmaps"
	// WaveExtraSecrets is WaveExtraConfigMaps for Secrets.
	WaveExtraSecrets = "wave.pusher.com/extra-secrets"
)
