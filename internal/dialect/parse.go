package dialect

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"nudge.dev/nudge/internal/maintenance"
	"nudge.dev/nudge/internal/refs"
)

// Parse is Parser.Parse with Reloader's default annotation names.
func Parse(namespace string, meta, template map[string]string) (Spec, []error) {
	return Parser{}.Parse(namespace, meta, template)
}

// Parse reads the dependency annotations of a workload in namespace, from
// its metadata annotations (meta) and its pod template's annotations
// (template), every dialect united. Either map may be nil. Reloader's
// annotations are read by the names p was made with (NewParser); the names
// below are Reloader's defaults.
//
// Where each dialect is read from: Reloader reads its annotations from the
// workload's metadata and falls back to the pod template's when the metadata
// has none of them (https://github.com/stakater/Reloader#how-to-use-reloader);
// nudge applies that rule to each dialect on its own. For nudge.dev/*,
// pod-reloader and Wave, "none of them" means none of that dialect's
// annotations. For Reloader it is exactly Reloader's rule, decided per kind:
// ConfigMaps are read from the template when the metadata has none of
// reloader.stakater.com/auto, reloader.stakater.com/search,
// configmap.reloader.stakater.com/auto and configmap.reloader.stakater.com/reload,
// and Secrets likewise with the secret.* forms (SecretProviderClasses with
// the secretproviderclass.* ones). Reloader's exclude
// annotations are read from the metadata, as Reloader does, and also from the
// template when that kind was read from the template and the metadata has no
// exclude annotation for it.
//
// Values:
//   - booleans are "true" or "false" in any case, spaces around them trimmed
//     (Reloader also takes strconv.ParseBool's "1", "t" and such; here they
//     are errors); an auto annotation "false", Wave's included, sets
//     Selection.AutoOptOut for the kinds it covers;
//   - lists are comma-separated; spaces around entries are trimmed and empty
//     entries skipped (unlike pod-reloader, which does not trim);
//   - nudge.dev/* and Wave's extra-* lists hold "name" or "namespace/name";
//     pod-reloader's hold names in the workload's namespace; names must be
//     DNS subdomains, namespaces DNS labels; a source named in another
//     namespace goes to Spec.Refused instead of Spec.Named when p denies
//     such references (see WithCrossNamespace), with no error: it is no
//     malformed annotation;
//   - Reloader's reload and exclude lists hold, in the workload's namespace,
//     anchored regular expressions ("^(?:entry)$"; see Named.Pattern). The
//     group is a deliberate fix: Reloader anchors with "^entry$", so that
//     "a|b" matches any name starting with "a" or ending with "b"; here it
//     matches "a" and "b" only. Reloader compares exclude entries literally;
//     here they are expressions like reload entries, which differs only for
//     entries with regular-expression characters such as ".";
//   - nudge.dev/configmap-selector and nudge.dev/secret-selector are label
//     selectors in kubectl's syntax (ParseSelector), not empty;
//   - nudge.dev/rollout-window is a Go duration (time.ParseDuration), >= 0;
//   - nudge.dev/max-rollouts-per-hour, read on the metadata only, is an
//     integer >= 0;
//   - nudge.dev/maintenance-window, read on the metadata only, is a
//     maintenance window (maintenance.Parse); a malformed one is an error
//     and the workload has no window;
//   - nudge.dev/paused, read on the metadata only, is a boolean; a
//     malformed one is an error and the workload is not paused.
//
// Bad input never panics and is never dropped silently: Parse returns one
// *AnnotationError per bad annotation, wrapping ErrNotBool, ErrBadPattern,
// ErrBadName, ErrBadDuration or ErrBadSelector (all ErrMalformed) once per
// bad value. A bad boolean, duration or selector annotation is ignored; a bad list entry is skipped and
// the rest of the list used. Errors come in a fixed order: nudge, Reloader,
// pod-reloader, Wave.
func (pr Parser) Parse(namespace string, meta, template map[string]string) (Spec, []error) {
	p := parser{namespace: namespace, reloaderNames: pr.Reloader(), deny: pr.denyCrossNamespace, dialects: map[Dialect]bool{}, reported: map[place]bool{}}
	p.spec.reloader = p.reloaderNames
	p.native(meta, template)
	p.reloader(meta, template)
	p.podReloader(meta, template)
	p.wave(meta, template)
	return p.finish(), p.errs
}

// source is one set of annotations Parse reads a dialect from.
type source struct {
	values   map[string]string
	template bool
}

// pick returns the metadata when it holds any of keys, else the template.
func pick(meta, template map[string]string, keys ...string) source {
	for _, k := range keys {
		if _, ok := meta[k]; ok {
			return source{values: meta}
		}
	}
	return source{values: template, template: true}
}

// place is one annotation in one source, to report it at most once.
type place struct {
	annotation string
	template   bool
}

type parser struct {
	namespace     string
	reloaderNames ReloaderNames
	deny          bool // refuse sources named in another namespace (Spec.Refused)
	spec          Spec
	dialects      map[Dialect]bool
	errs          []error
	reported      map[place]bool
}

func (p *parser) native(meta, template map[string]string) {
	keys := []string{NudgeAuto, NudgeConfigMaps, NudgeSecrets, NudgeExcludeConfigMaps, NudgeExcludeSecrets, NudgeRolloutWindow,
		NudgeConfigMapSelector, NudgeSecretSelector}
	src := pick(meta, template, keys...)
	p.present(Nudge, src, keys...)
	p.auto(src, NudgeAuto, &p.spec.ConfigMaps, &p.spec.Secrets, &p.spec.SecretProviderClasses)
	p.named(p.names(src, NudgeConfigMaps, refs.ConfigMap, Nudge, true))
	p.named(p.names(src, NudgeSecrets, refs.Secret, Nudge, true))
	p.spec.Exclude = append(p.spec.Exclude, p.names(src, NudgeExcludeConfigMaps, refs.ConfigMap, Nudge, true)...)
	p.spec.Exclude = append(p.spec.Exclude, p.names(src, NudgeExcludeSecrets, refs.Secret, Nudge, true)...)
	p.selector(src, NudgeConfigMapSelector, refs.ConfigMap)
	p.selector(src, NudgeSecretSelector, refs.Secret)
	p.window(src)
	p.budget(meta)
	p.maintenance(meta)
	p.spec.Paused, _ = p.boolean(source{values: meta}, NudgePaused)
	p.strategy(meta)
}

// strategy reads nudge.dev/rollout-strategy and nudge.dev/max-unavailable
// from the workload's metadata. A strategy nudge does not know is reported
// and counts as "rollout": the template is changed, nothing is evicted.
func (p *parser) strategy(meta map[string]string) {
	switch v, found := meta[NudgeRolloutStrategy]; {
	case !found, strings.TrimSpace(v) == "rollout":
	case strings.TrimSpace(v) == "evict":
		p.spec.Evict = true
	default:
		p.fail(source{values: meta}, NudgeRolloutStrategy, fmt.Errorf("%w %q: want \"evict\" or \"rollout\"; the pods are not evicted", ErrBadStrategy, v))
	}
	v, found := meta[NudgeMaxUnavailable]
	if !found {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		p.fail(source{values: meta}, NudgeMaxUnavailable, fmt.Errorf("%w %q: want a whole number of pods, 1 or more; one pod at a time", ErrBadNumber, v))
		return
	}
	p.spec.MaxUnavailable = n
}

// maintenance reads nudge.dev/maintenance-window from the workload's
// metadata (see maintenance.Parse).
func (p *parser) maintenance(meta map[string]string) {
	v, found := meta[NudgeMaintenanceWindow]
	if !found {
		return
	}
	w, err := maintenance.Parse(v)
	if err != nil {
		p.fail(source{values: meta}, NudgeMaintenanceWindow, fmt.Errorf("%w %q: %w; the workload counts as having none of its own", ErrBadSchedule, v, err))
		w = maintenance.Window{}
	}
	p.spec.Maintenance = &w
}

// budget reads nudge.dev/max-rollouts-per-hour from the workload's
// metadata.
func (p *parser) budget(meta map[string]string) {
	v, found := meta[NudgeMaxRolloutsPerHour]
	if !found {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		p.fail(source{values: meta}, NudgeMaxRolloutsPerHour, fmt.Errorf("%w %q: want a whole number of rollouts, 0 or more", ErrBadNumber, v))
		return
	}
	p.spec.Budget = &n
}

func (p *parser) reloader(meta, template map[string]string) {
	n := p.reloaderNames
	kinds := []struct {
		kind                  refs.Kind
		sel                   *Selection
		auto, reload, exclude string
	}{
		{refs.ConfigMap, &p.spec.ConfigMaps, n.ConfigMapAuto, n.ConfigMapReload, n.ConfigMapExclude},
		{refs.Secret, &p.spec.Secrets, n.SecretAuto, n.SecretReload, n.SecretExclude},
		{refs.SecretProviderClass, &p.spec.SecretProviderClasses, n.SecretProviderClassAuto, n.SecretProviderClassReload, n.SecretProviderClassExclude},
	}
	for _, k := range kinds {
		keys := []string{n.Auto, n.Search, k.auto, k.reload}
		src := pick(meta, template, keys...)
		p.present(Reloader, src, keys...)
		p.auto(src, n.Auto, k.sel)
		p.auto(src, k.auto, k.sel)
		if search, ok := p.boolean(src, n.Search); ok && search {
			k.sel.Search = true
		}
		p.spec.Named = append(p.spec.Named, p.patterns(src, k.reload, k.kind)...)

		exclude := source{values: meta}
		if _, ok := meta[k.exclude]; !ok && src.template {
			exclude = src
		}
		p.present(Reloader, exclude, k.exclude)
		p.spec.Exclude = append(p.spec.Exclude, p.patterns(exclude, k.exclude, k.kind)...)
	}
}

func (p *parser) podReloader(meta, template map[string]string) {
	keys := []string{PodReloaderConfigMaps, PodReloaderSecrets}
	src := pick(meta, template, keys...)
	p.present(PodReloader, src, keys...)
	p.spec.Named = append(p.spec.Named, p.names(src, PodReloaderConfigMaps, refs.ConfigMap, PodReloader, false)...)
	p.spec.Named = append(p.spec.Named, p.names(src, PodReloaderSecrets, refs.Secret, PodReloader, false)...)
}

func (p *parser) wave(meta, template map[string]string) {
	keys := []string{WaveUpdateOnConfigChange, WaveExtraConfigMaps, WaveExtraSecrets}
	src := pick(meta, template, keys...)
	p.present(Wave, src, keys...)
	p.auto(src, WaveUpdateOnConfigChange, &p.spec.ConfigMaps, &p.spec.Secrets)
	p.named(p.names(src, WaveExtraConfigMaps, refs.ConfigMap, Wave, true))
	p.named(p.names(src, WaveExtraSecrets, refs.Secret, Wave, true))
}

// named adds entries to Spec.Named, but those of another namespace to
// Spec.Refused when such references are denied.
func (p *parser) named(entries []Named) {
	for _, n := range entries {
		if p.deny && n.Namespace != p.namespace {
			p.spec.Refused = append(p.spec.Refused, n)
			continue
		}
		p.spec.Named = append(p.spec.Named, n)
	}
}

// present records d as present when src holds any of keys.
func (p *parser) present(d Dialect, src source, keys ...string) {
	for _, k := range keys {
		if _, ok := src.values[k]; ok {
			p.dialects[d] = true
			return
		}
	}
}

// fail records a problem with one annotation, once per annotation and source.
func (p *parser) fail(src source, annotation string, err error) {
	at := place{annotation: annotation, template: src.template}
	if p.reported[at] {
		return
	}
	p.reported[at] = true
	p.errs = append(p.errs, &AnnotationError{Annotation: annotation, Template: src.template, Err: err})
}

// boolean reads a boolean annotation; ok is false when it is absent or bad.
func (p *parser) boolean(src source, key string) (value, ok bool) {
	v, found := src.values[key]
	if !found {
		return false, false
	}
	b, err := parseBool(v)
	if err != nil {
		p.fail(src, key, err)
		return false, false
	}
	return b, true
}

// auto applies an auto annotation to sels: "true" sets Auto, "false" sets
// AutoOptOut.
func (p *parser) auto(src source, key string, sels ...*Selection) {
	v, ok := p.boolean(src, key)
	if !ok {
		return
	}
	for _, s := range sels {
		if v {
			s.Auto = true
		} else {
			s.AutoOptOut = true
		}
	}
}

func (p *parser) window(src source) {
	v, found := src.values[NudgeRolloutWindow]
	if !found {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	switch {
	case err != nil:
		p.fail(src, NudgeRolloutWindow, badDuration(v, `not a Go duration such as "30s" or "2m"`))
	case d < 0:
		p.fail(src, NudgeRolloutWindow, badDuration(v, "negative"))
	default:
		p.spec.Window = &d
	}
}

// names reads a list of literal names; crossNamespace allows entries of the
// form "namespace/name".
func (p *parser) names(src source, key string, kind refs.Kind, d Dialect, crossNamespace bool) []Named {
	var out []Named
	var errs []error
	for _, e := range entries(src.values[key]) {
		namespace, name := p.namespace, e
		if crossNamespace {
			if ns, n, found := strings.Cut(e, "/"); found {
				namespace, name = ns, n
				if len(validation.IsDNS1123Label(namespace)) > 0 {
					errs = append(errs, badName(e, "namespace is not a lowercase RFC 1123 label"))
					continue
				}
			}
		}
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			errs = append(errs, badName(e, "not a lowercase RFC 1123 subdomain"))
			continue
		}
		out = append(out, Named{Kind: kind, Namespace: namespace, Name: name, Dialect: d})
	}
	if err := joinEntries(errs); err != nil {
		p.fail(src, key, err)
	}
	return out
}

// patterns reads a Reloader list: each entry a plain name or an anchored
// regular expression, in the workload's namespace.
func (p *parser) patterns(src source, key string, kind refs.Kind) []Named {
	var out []Named
	var errs []error
	for _, e := range entries(src.values[key]) {
		n := Named{Kind: kind, Namespace: p.namespace, Name: e, Dialect: Reloader}
		if regexp.QuoteMeta(e) == e {
			if len(validation.IsDNS1123Subdomain(e)) > 0 {
				errs = append(errs, badName(e, "not a lowercase RFC 1123 subdomain, so it matches nothing"))
				continue
			}
			out = append(out, n)
			continue
		}
		// Compiled alone first so that an entry cannot escape its group,
		// as "a)|(b" would.
		if _, err := regexp.Compile(e); err != nil {
			errs = append(errs, badPattern(e, err))
			continue
		}
		re, err := regexp.Compile("^(?:" + e + ")$")
		if err != nil {
			errs = append(errs, badPattern(e, err))
			continue
		}
		n.Pattern = re
		out = append(out, n)
	}
	if err := joinEntries(errs); err != nil {
		p.fail(src, key, err)
	}
	return out
}

// entries splits a comma-separated list, trimming spaces around entries and
// skipping empty ones.
func entries(v string) []string {
	var out []string
	for e := range strings.SplitSeq(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// finish sorts and deduplicates what the dialects contributed.
func (p *parser) finish() Spec {
	s := p.spec
	s.Named = sortNamed(s.Named)
	s.Exclude = sortNamed(s.Exclude)
	s.Refused = sortNamed(s.Refused)
	for d := range p.dialects {
		s.Dialects = append(s.Dialects, d)
	}
	slices.Sort(s.Dialects)
	return s
}

func sortNamed(in []Named) []Named {
	if len(in) == 0 {
		return nil
	}
	slices.SortFunc(in, compareNamed)
	return slices.CompactFunc(in, func(a, b Named) bool { return compareNamed(a, b) == 0 })
}

func compareNamed(a, b Named) int {
	return cmp.Or(
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Dialect, b.Dialect),
		cmp.Compare(boolInt(a.Pattern != nil), boolInt(b.Pattern != nil)),
	)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
