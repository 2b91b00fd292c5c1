package dialect

// ReloaderNames are the names of Stakater Reloader's annotations, which
// Reloader lets an installation rename with its flags (--auto-annotation,
// --configmap-annotation, ...; see
// https://github.com/stakater/Reloader/blob/master/internal/pkg/config/flags/flags.go).
// nudge takes the same flags (options.Options.Reloader) and reads the
// renamed annotations instead of the default ones; the other dialects'
// names are fixed. DefaultReloaderNames gives Reloader's defaults.
type ReloaderNames struct {
	// Auto is --auto-annotation (reloader.stakater.com/auto).
	Auto string
	// ConfigMapAuto is --configmap-auto-annotation
	// (configmap.reloader.stakater.com/auto).
	ConfigMapAuto string
	// SecretAuto is --secret-auto-annotation (secret.reloader.stakater.com/auto).
	SecretAuto string
	// ConfigMapReload is --configmap-annotation
	// (configmap.reloader.stakater.com/reload).
	ConfigMapReload string
	// SecretReload is --secret-annotation (secret.reloader.stakater.com/reload).
	SecretReload string
	// ConfigMapExclude is --configmap-exclude-annotation
	// (configmaps.exclude.reloader.stakater.com/reload).
	ConfigMapExclude string
	// SecretExclude is --secret-exclude-annotation
	// (secrets.exclude.reloader.stakater.com/reload).
	SecretExclude string
	// Search is --auto-search-annotation (reloader.stakater.com/search).
	Search string
	// Match, on a source, is --search-match-annotation
	// (reloader.stakater.com/match).
	Match string
	// Ignore, on a source, is --ignore-annotation (reloader.stakater.com/ignore).
	Ignore string
	// PausePeriod, on a Deployment, is --pause-deployment-annotation
	// (deployment.reloader.stakater.com/pause-period).
	PausePeriod string
	// PausedAt, on a Deployment nudge paused, is
	// --pause-deployment-time-annotation (deployment.reloader.stakater.com/paused-at).
	PausedAt string
	// SecretProviderClassAuto is --secretproviderclass-auto-annotation
	// (secretproviderclass.reloader.stakater.com/auto).
	SecretProviderClassAuto string
	// SecretProviderClassReload is --secretproviderclass-annotation
	// (secretproviderclass.reloader.stakater.com/reload).
	SecretProviderClassReload string
	// SecretProviderClassExclude is --secretproviderclass-exclude-annotation
	// (secretproviderclasses.exclude.reloader.stakater.com/reload).
	SecretProviderClassExclude string
}

// Names of Reloader's pause annotations, the defaults of
// ReloaderNames.PausePeriod and ReloaderNames.PausedAt
// (https://github.com/stakater/Reloader#pause-deployments).
const (
	// ReloaderPausePeriod on a Deployment pauses it with each rollout
	// trigger and resumes it when the period (a Go duration) has passed.
	ReloaderPausePeriod = "deployment.reloader.stakater.com/pause-period"
	// ReloaderPausedAt records, in RFC 3339, when a Deployment was paused
	// for its pause period.
	ReloaderPausedAt = "deployment.reloader.stakater.com/paused-at"
	// ReloaderRolloutStrategy "restart" on an Argo Rollout makes nudge set
	// spec.restartAt instead of changing the pod template
	// (https://github.com/stakater/Reloader#argo-rollouts).
	ReloaderRolloutStrategy = "reloader.stakater.com/rollout-strategy"
)

// DefaultReloaderNames returns Reloader's default annotation names.
func DefaultReloaderNames() ReloaderNames {
	return ReloaderNames{
		Auto:             ReloaderAuto,
		ConfigMapAuto:    ReloaderConfigMapAuto,
		SecretAuto:       ReloaderSecretAuto,
		ConfigMapReload:  ReloaderConfigMapReload,
		SecretReload:     ReloaderSecretReload,
		ConfigMapExclude: ReloaderExcludeConfigMaps,
		SecretExclude:    ReloaderExcludeSecrets,
		Search:           ReloaderSearch,
		Match:            ReloaderMatch,
		Ignore:           ReloaderIgnore,
		PausePeriod:      ReloaderPausePeriod,
		PausedAt:         ReloaderPausedAt,

		SecretProviderClassAuto:    ReloaderSecretProviderClassAuto,
		SecretProviderClassReload:  ReloaderSecretProviderClassReload,
		SecretProviderClassExclude: ReloaderExcludeSecretProviderClasses,
	}
}

// Parser reads the dialects' annotations with the Reloader names it was
// made with. The zero Parser reads Reloader's default names and counts a
// source named in another namespace (see WithCrossNamespace).
type Parser struct {
	reloader ReloaderNames
	// denyCrossNamespace puts the sources named in another namespace in
	// Spec.Refused instead of Spec.Named.
	denyCrossNamespace bool
}

// WithCrossNamespace returns p, reading an entry "namespace/name" of
// another namespace than the workload's (nudge.dev/configmaps,
// nudge.dev/secrets, Wave's extra-configmaps and extra-secrets) as a
// source that counts (allow, --cross-namespace-references=allow, Wave's
// rule) or as one refused (Spec.Refused: never read, never counted).
// Exclude entries are read the same either way: excluding takes nothing
// from another namespace.
func (p Parser) WithCrossNamespace(allow bool) Parser {
	p.denyCrossNamespace = !allow
	return p
}

// NewParser returns a Parser that reads Reloader's annotations by names; an
// empty name in names keeps Reloader's default for it.
func NewParser(names ReloaderNames) Parser {
	d := DefaultReloaderNames()
	fill := func(dst *string, def string) {
		if *dst == "" {
			*dst = def
		}
	}
	fill(&names.Auto, d.Auto)
	fill(&names.ConfigMapAuto, d.ConfigMapAuto)
	fill(&names.SecretAuto, d.SecretAuto)
	fill(&names.ConfigMapReload, d.ConfigMapReload)
	fill(&names.SecretReload, d.SecretReload)
	fill(&names.ConfigMapExclude, d.ConfigMapExclude)
	fill(&names.SecretExclude, d.SecretExclude)
	fill(&names.Search, d.Search)
	fill(&names.Match, d.Match)
	fill(&names.Ignore, d.Ignore)
	fill(&names.PausePeriod, d.PausePeriod)
	fill(&names.PausedAt, d.PausedAt)
	fill(&names.SecretProviderClassAuto, d.SecretProviderClassAuto)
	fill(&names.SecretProviderClassReload, d.SecretProviderClassReload)
	fill(&names.SecretProviderClassExclude, d.SecretProviderClassExclude)
	return Parser{reloader: names}
}

// Reloader returns the Reloader names p reads, defaults filled in.
func (p Parser) Reloader() ReloaderNames {
	if p.reloader == (ReloaderNames{}) {
		return DefaultReloaderNames()
	}
	return p.reloader
}
