package dialect

import (
	"regexp"
	"slices"
	"time"

	"nudge.dev/nudge/internal/maintenance"

	"nudge.dev/nudge/internal/refs"
)

// Dialect names one family of annotations.
type Dialect string

// The dialects nudge reads.
const (
	// Nudge is nudge's own nudge.dev/* annotations.
	Nudge Dialect = "nudge"
	// Reloader is Stakater Reloader's; see
	// https://github.com/stakater/Reloader#how-to-use-reloader.
	Reloader Dialect = "reloader"
	// PodReloader is SAP pod-reloader's; see https://github.com/SAP/pod-reloader.
	PodReloader Dialect = "pod-reloader"
	// Wave is Wave's; see https://github.com/wave-k8s/wave.
	Wave Dialect = "wave"
)

// Named is one entry of an annotation that names sources: a source it names
// counts for the workload, as a whole object, whether or not the pod spec
// uses it (Reloader's rule, applied to every dialect), unless an Exclude
// entry or the source's own ignore annotation says otherwise.
type Named struct {
	// Kind is refs.ConfigMap or refs.Secret.
	Kind refs.Kind
	// Namespace is the workload's namespace, unless the entry was
	// "namespace/name" (nudge.dev/* and Wave's extra-* lists).
	Namespace string
	// Name is the source's name when Pattern is nil; otherwise the entry as
	// written, for logs.
	Name string
	// Pattern is set for an entry of a Reloader list that is a regular
	// expression; it is anchored: "^(?:entry)$". It is nil when the entry is
	// a plain name (regexp.QuoteMeta(entry) == entry), so that callers can
	// index it by name. A name with a "." is therefore a pattern, as in
	// Reloader: "my.cfg" also matches "myXcfg".
	Pattern *regexp.Regexp
	// Dialect is the dialect of the annotation the entry came from.
	Dialect Dialect
}

// Matches reports whether n names src: same kind and namespace, and the name
// equal to Name or, for a pattern, matched by Pattern.
func (n Named) Matches(src refs.Source) bool {
	if src.Kind != n.Kind || src.Namespace != n.Namespace {
		return false
	}
	if n.Pattern != nil {
		return n.Pattern.MatchString(src.Name)
	}
	return src.Name == n.Name
}

// Selection says which sources of one kind found in the pod spec count.
type Selection struct {
	// Auto: every source of this kind the pod spec uses counts.
	Auto bool
	// AutoOptOut: an auto annotation for this kind is explicitly "false"
	// (nudge.dev/auto, reloader.stakater.com/auto, its typed form, or Wave's
	// update-on-config-change), so --auto-reload-all does not apply.
	AutoOptOut bool
	// Search: a source of this kind the pod spec uses counts when it carries
	// reloader.stakater.com/match "true" (see Matched).
	Search bool
}

// Automatic reports whether every source of this kind the pod spec uses
// counts, given Reloader's --auto-reload-all flag: Auto, or the flag set and
// no explicit opt-out.
func (s Selection) Automatic(autoReloadAll bool) bool {
	return s.Auto || autoReloadAll && !s.AutoOptOut
}

// Spec is what one workload's annotations say it depends on, every dialect
// united. The zero Spec depends on nothing.
type Spec struct {
	// ConfigMaps, Secrets and SecretProviderClasses say which sources found
	// in the pod spec count. SecretProviderClasses are selected by
	// nudge.dev/auto and Reloader's annotations only (Reloader's
	// reloader.stakater.com/auto and search, and its secretproviderclass.*
	// forms).
	ConfigMaps, Secrets, SecretProviderClasses Selection
	// Named holds the sources named by annotations, sorted by kind,
	// namespace, name and dialect. One source may be named by several
	// dialects and so appear more than once.
	Named []Named
	// Refused holds the sources named in another namespace than the
	// workload's while the Parser denies such references
	// (--cross-namespace-references=deny), sorted like Named: they are
	// never read and count for nothing, but the workload opts in with them
	// as with Named, so that it is told of the refusal.
	Refused []Named
	// Selectors holds the label selector annotations
	// (nudge.dev/configmap-selector, then nudge.dev/secret-selector), each
	// a set of sources that counts as one reference (Selected.Source).
	Selectors []Selected
	// Exclude holds the sources that never count for the workload, however
	// they are selected (pod spec, Named or Selectors), sorted like Named. As in
	// Reloader, exclusion wins over a name in a reload list.
	Exclude []Named
	// Window is nudge.dev/rollout-window, >= 0; nil when unset or
	// malformed. Whether it replaces --rollout-window is the flags' to say
	// (resolve.Resolver.Limits).
	Window *time.Duration
	// Budget is nudge.dev/max-rollouts-per-hour, >= 0; nil when unset or
	// malformed. Whether it replaces --max-rollouts-per-hour is the flags'
	// to say (resolve.Resolver.Limits).
	Budget *int
	// Maintenance is nudge.dev/maintenance-window; nil when unset. When
	// malformed it is the zero Window, always open: the workload rolls as
	// if it had no window of its own (a rollout is never lost to a typo),
	// and Parse returns the error.
	Maintenance *maintenance.Window
	// Paused is nudge.dev/paused "true" on the workload's metadata: its
	// rollouts are held until it is lifted. A malformed value pauses
	// nothing, and Parse returns the error.
	Paused bool
	// Evict is nudge.dev/rollout-strategy "evict": a rollout also evicts
	// the pods that started before it (package eviction).
	Evict bool
	// MaxUnavailable is nudge.dev/max-unavailable, 1 or more; 0 when
	// unset or malformed (one pod at a time).
	MaxUnavailable int
	// Dialects lists, sorted, the dialects whose annotations were present on
	// the workload (in the place they were read from), for logs.
	Dialects []Dialect

	// reloader are the Reloader names the Spec was parsed with, for Counts.
	reloader ReloaderNames
}

// For returns the Selection for kind; the zero Selection for a kind other
// than refs.ConfigMap, refs.Secret and refs.SecretProviderClass.
func (s Spec) For(kind refs.Kind) Selection {
	switch kind {
	case refs.ConfigMap:
		return s.ConfigMaps
	case refs.Secret:
		return s.Secrets
	case refs.SecretProviderClass:
		return s.SecretProviderClasses
	default:
		return Selection{}
	}
}

// ReloaderSelected reports whether Reloader's annotations select the
// workload, or, with none of any dialect, Reloader's --auto-reload-all
// (autoReloadAll): its rollout also writes Reloader's last-reloaded-from.
func (s Spec) ReloaderSelected(autoReloadAll bool) bool {
	return slices.Contains(s.Dialects, Reloader) || (len(s.Dialects) == 0 && autoReloadAll)
}

// Enabled reports whether the workload depends on anything at all, given
// Reloader's --auto-reload-all flag: an automatic or search selection for
// any kind, a named source (refused ones too), or a label selector.
func (s Spec) Enabled(autoReloadAll bool) bool {
	for _, sel := range []Selection{s.ConfigMaps, s.Secrets, s.SecretProviderClasses} {
		if sel.Automatic(autoReloadAll) || sel.Search {
			return true
		}
	}
	return len(s.Named) > 0 || len(s.Refused) > 0 || len(s.Selectors) > 0
}

// Excluded reports whether an Exclude entry matches src.
func (s Spec) Excluded(src refs.Source) bool {
	for _, n := range s.Exclude {
		if n.Matches(src) {
			return true
		}
	}
	return false
}

// Counts reports whether source src counts for the workload. annotations are
// the source's own (nil when it does not exist); inPodSpec says whether the
// pod spec uses it (refs.FromPodSpec); autoReloadAll is Reloader's flag.
//
// In order: an ignored source (see Ignored) or an excluded one never counts;
// a named one always counts; otherwise it counts only if the pod spec uses it
// and its kind's Selection is automatic, or in search mode and the source is
// Matched.
func (s Spec) Counts(src refs.Source, annotations map[string]string, inPodSpec, autoReloadAll bool) bool {
	marks := Parser{reloader: s.reloader}
	if marks.Ignored(annotations) || s.Excluded(src) {
		return false
	}
	for _, n := range s.Named {
		if n.Matches(src) {
			return true
		}
	}
	if !inPodSpec {
		return false
	}
	sel := s.For(src.Kind)
	return sel.Automatic(autoReloadAll) || sel.Search && marks.Matched(annotations)
}
