package refs

import (
	"slices"
	"strings"
)

// Kind is the kind of a source: "ConfigMap", "Secret" or
// "SecretProviderClass".
type Kind string

// The source kinds nudge watches.
const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
	// SecretProviderClass is a Secrets Store CSI driver SecretProviderClass
	// (https://secrets-store-csi-driver.sigs.k8s.io/concepts#secretproviderclass),
	// read by nudge through the SecretProviderClassPodStatuses the driver
	// writes for each pod that mounts it; always a whole object.
	SecretProviderClass Kind = "SecretProviderClass"
	// ConfigMapSelector is the set of ConfigMaps a label selector on the
	// workload (nudge.dev/configmap-selector) matches in its namespace: one
	// reference whose Source.Name is the selector in its canonical form
	// (labels.Selector.String, e.g. "app=dash,tier in (a,b)") and whose
	// content is the names and content of every match.
	ConfigMapSelector Kind = "ConfigMapSelector"
	// SecretSelector is ConfigMapSelector for Secrets
	// (nudge.dev/secret-selector).
	SecretSelector Kind = "SecretSelector"
)

// Selects returns the kind of the sources a selector kind matches
// (ConfigMap for ConfigMapSelector, Secret for SecretSelector), and ok
// false for every other kind.
func (k Kind) Selects() (kind Kind, ok bool) {
	switch k {
	case ConfigMapSelector:
		return ConfigMap, true
	case SecretSelector:
		return Secret, true
	}
	return "", false
}

// SelectorOf returns the selector kind of the sources of kind k
// (ConfigMapSelector for ConfigMap, SecretSelector for Secret), and ok
// false for every other kind.
func SelectorOf(k Kind) (kind Kind, ok bool) {
	switch k {
	case ConfigMap:
		return ConfigMapSelector, true
	case Secret:
		return SecretSelector, true
	}
	return "", false
}

// Source names one source object.
type Source struct {
	Kind      Kind
	Namespace string
	Name      string
}

// String returns "Kind/namespace/name", the form used in index keys, logs and
// Events.
func (s Source) String() string {
	return string(s.Kind) + "/" + s.Namespace + "/" + s.Name
}

// Compare orders sources by kind, then namespace, then name.
func (s Source) Compare(o Source) int {
	if c := strings.Compare(string(s.Kind), string(o.Kind)); c != 0 {
		return c
	}
	if c := strings.Compare(s.Namespace, o.Namespace); c != 0 {
		return c
	}
	return strings.Compare(s.Name, o.Name)
}

// Reference is one workload's use of one source.
//
// Keys is nil when the workload reads the whole object (envFrom, a volume
// without items, or a named reference from an annotation); otherwise it holds
// the keys read, sorted and without duplicates. Optional is true only when
// every use of the source is optional: one required use makes the pod unable
// to start without it.
type Reference struct {
	Source
	Keys     []string
	Optional bool
}

// Whole reports whether the reference covers every key of the source.
func (r Reference) Whole() bool { return r.Keys == nil }

// Merge unites references to the same source: a whole-object use absorbs key
// uses, key sets are united, and a source is optional only if every use of it
// is. The result is sorted by Source.
func Merge(in []Reference) []Reference {
	bySource := make(map[Source]int, len(in))
	out := make([]Reference, 0, len(in))
	for _, r := range in {
		i, seen := bySource[r.Source]
		if !seen {
			bySource[r.Source] = len(out)
			r.Keys = normalKeys(r.Keys)
			out = append(out, r)
			continue
		}
		cur := &out[i]
		cur.Optional = cur.Optional && r.Optional
		switch {
		case cur.Whole():
		case r.Whole():
			cur.Keys = nil
		default:
			cur.Keys = normalKeys(append(slices.Clone(cur.Keys), r.Keys...))
		}
	}
	slices.SortFunc(out, func(a, b Reference) int { return a.Source.Compare(b.Source) })
	return out
}

// normalKeys sorts and deduplicates keys, keeping nil as nil (whole object)
// and turning an empty non-nil set into an empty non-nil set.
func normalKeys(keys []string) []string {
	if keys == nil {
		return nil
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Names renders sources as "ConfigMap shop/app, Secret shop/db", the form of
// nudge's Events, log lines and nudge.dev/restarted-for.
func Names(sources []Source) string {
	parts := make([]string, len(sources))
	for i, s := range sources {
		parts[i] = string(s.Kind) + " " + s.Namespace + "/" + s.Name
	}
	return strings.Join(parts, ", ")
}
