package fingerprint

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"nudge.dev/nudge/internal/refs"
)

// version is the format version of a formatted State.
const version = "v1"

// ErrState is wrapped by Parse's errors for a value it cannot read.
var ErrState = errors.New("malformed applied fingerprint")

// Entry is the applied or desired digest of one source.
type Entry struct {
	// Shape tags the set of keys read (see Shape); "" for the whole object.
	Shape string
	// Digest is the keyed digest of what is read (see Key.Source), or Absent.
	Digest string
}

// State is the fingerprint of every source a workload references: the key it
// was computed with and one Entry per source.
type State struct {
	KeyID   string
	Entries map[refs.Source]Entry
}

// Format renders s as the value of the annotation nudge.dev/applied-fingerprint:
//
//	v1.<key-id> <kind>/[<namespace>/]<name>[:<shape>]=<digest> ...
//
// entries sorted, the namespace written only when it is not namespace (the
// workload's). Source names, namespaces, kinds, shapes and digests never
// contain a space, '/', ':' or '=' beyond these separators: the name of a
// selector kind (refs.ConfigMapSelector, refs.SecretSelector), a label
// selector, is written query-escaped (url.QueryEscape: "app%3Ddash").
func (s State) Format(namespace string) string {
	var b strings.Builder
	b.WriteString(version + "." + s.KeyID)
	for _, src := range slices.SortedFunc(maps.Keys(s.Entries), refs.Source.Compare) {
		e := s.Entries[src]
		b.WriteString(" " + string(src.Kind) + "/")
		if src.Namespace != namespace {
			b.WriteString(src.Namespace + "/")
		}
		b.WriteString(entryName(src))
		if e.Shape != "" {
			b.WriteString(":" + e.Shape)
		}
		b.WriteString("=" + e.Digest)
	}
	return b.String()
}

// Parse reads a value written by Format for a workload in namespace. It
// returns an error wrapping ErrState for anything else; callers treat that
// as first sight.
func Parse(v, namespace string) (State, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return State{}, fmt.Errorf("%w: empty", ErrState)
	}
	keyID, ok := strings.CutPrefix(fields[0], version+".")
	if !ok || keyID == "" {
		return State{}, fmt.Errorf("%w: unknown version in %q", ErrState, fields[0])
	}
	s := State{KeyID: keyID, Entries: make(map[refs.Source]Entry, len(fields)-1)}
	for _, f := range fields[1:] {
		ident, digest, ok := strings.Cut(f, "=")
		if !ok || digest == "" {
			return State{}, fmt.Errorf("%w: entry %q has no digest", ErrState, f)
		}
		ident, shape, _ := strings.Cut(ident, ":")
		parts := strings.Split(ident, "/")
		src := refs.Source{Kind: refs.Kind(parts[0]), Namespace: namespace}
		switch len(parts) {
		case 2:
			src.Name = parts[1]
		case 3:
			src.Namespace, src.Name = parts[1], parts[2]
		default:
			return State{}, fmt.Errorf("%w: entry %q", ErrState, f)
		}
		if _, selector := src.Kind.Selects(); selector {
			name, err := url.QueryUnescape(src.Name)
			if err != nil {
				return State{}, fmt.Errorf("%w: entry %q: %w", ErrState, f, err)
			}
			src.Name = name
		} else if src.Kind != refs.ConfigMap && src.Kind != refs.Secret && src.Kind != refs.SecretProviderClass {
			return State{}, fmt.Errorf("%w: entry %q", ErrState, f)
		}
		if src.Name == "" || src.Namespace == "" {
			return State{}, fmt.Errorf("%w: entry %q", ErrState, f)
		}
		s.Entries[src] = Entry{Shape: shape, Digest: digest}
	}
	return s, nil
}

// entryName is src's name as Format writes it: query-escaped for a
// selector kind, whose name is a label selector; as it is otherwise.
func entryName(src refs.Source) string {
	if _, selector := src.Kind.Selects(); selector {
		return url.QueryEscape(src.Name)
	}
	return src.Name
}

// Equal reports whether s and o hold the same key and entries.
func (s State) Equal(o State) bool {
	return s.KeyID == o.KeyID && maps.Equal(s.Entries, o.Entries)
}
