package binding

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrFieldPath is wrapped by ParsePath's errors and by Path operations on an
// object whose shape does not fit the path.
var ErrFieldPath = errors.New("invalid field path")

// Segment is one step of a Path: a field name, or an index into a list when
// Field is "".
type Segment struct {
	Field string
	Index int
}

// Path is a parsed field path: the fields and list indexes from the object's
// root to one field.
type Path []Segment

// ParsePath parses a field path as the Kubernetes API conventions write them
// and Crossplane's field paths read them (crossplane-runtime pkg/fieldpath,
// which the Go module proxy does not serve): field names separated by dots,
// a list index in brackets, and a field whose name holds dots or slashes in
// quoted brackets:
//
//	spec.imageChartStorage.s3.accesskey
//	spec.list[0].b
//	metadata.annotations['example.io/key']
//
// A path must start with a field name. It refuses, wrapping ErrFieldPath,
// anything else, and the fields nudge never writes: apiVersion, kind, status
// (a subresource: an apply to the object does not reach it), and of the
// metadata everything but labels and annotations.
func ParsePath(s string) (Path, error) {
	var p Path
	rest := s
	for rest != "" {
		switch {
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%w %q: unterminated [", ErrFieldPath, s)
			}
			inner := rest[1:end]
			if q := inner; len(q) >= 2 && (q[0] == '\'' || q[0] == '"') {
				if q[len(q)-1] != q[0] || len(q) == 2 || strings.ContainsRune(q[1:len(q)-1], rune(q[0])) {
					return nil, fmt.Errorf("%w %q: malformed quoted field %s", ErrFieldPath, s, inner)
				}
				p = append(p, Segment{Field: q[1 : len(q)-1]})
			} else {
				i, err := strconv.Atoi(inner)
				if err != nil || i < 0 || strings.HasPrefix(inner, "+") {
					return nil, fmt.Errorf("%w %q: %q is neither a list index nor a quoted field", ErrFieldPath, s, inner)
				}
				p = append(p, Segment{Index: i})
			}
			rest = rest[end+1:]
		case rest[0] == '.':
			if len(p) == 0 || len(rest) == 1 || rest[1] == '.' || rest[1] == '[' {
				return nil, fmt.Errorf("%w %q: empty field name", ErrFieldPath, s)
			}
			rest = rest[1:]
		default:
			if len(p) > 0 && s[len(s)-len(rest)-1] != '.' {
				return nil, fmt.Errorf("%w %q: a field name must follow a dot", ErrFieldPath, s)
			}
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			if strings.ContainsAny(name, "]'\" ") {
				return nil, fmt.Errorf("%w %q: unexpected character in field %q", ErrFieldPath, s, name)
			}
			p = append(p, Segment{Field: name})
			rest = rest[end:]
		}
	}
	if len(p) == 0 || p[0].Field == "" {
		return nil, fmt.Errorf("%w %q: it must start with a field name", ErrFieldPath, s)
	}
	if strings.HasSuffix(s, ".") {
		return nil, fmt.Errorf("%w %q: empty field name", ErrFieldPath, s)
	}
	switch p[0].Field {
	case "apiVersion", "kind", "status":
		return nil, fmt.Errorf("%w %q: nudge does not write %s", ErrFieldPath, s, p[0].Field)
	case "metadata":
		if len(p) != 3 || (p[1].Field != "labels" && p[1].Field != "annotations") || p[2].Field == "" {
			return nil, fmt.Errorf("%w %q: of the metadata nudge writes only a label or an annotation", ErrFieldPath, s)
		}
	}
	return p, nil
}

// String writes p back in the form ParsePath reads, quoting a field that
// holds a dot, a slash, a bracket, a quote or a space (which ParsePath reads
// only quoted), in single quotes unless it holds one.
func (p Path) String() string {
	var b strings.Builder
	for i, seg := range p {
		switch {
		case seg.Field == "":
			b.WriteString("[" + strconv.Itoa(seg.Index) + "]")
		case strings.Contains(seg.Field, "'"):
			b.WriteString(`["` + seg.Field + `"]`)
		case strings.ContainsAny(seg.Field, "./[]\" "):
			b.WriteString("['" + seg.Field + "']")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg.Field)
		}
	}
	return b.String()
}

// Get returns the value at p in obj (an unstructured object's content) and
// whether it is there.
func (p Path) Get(obj map[string]any) (any, bool) {
	var cur any = obj
	for _, seg := range p {
		switch c := cur.(type) {
		case map[string]any:
			if seg.Field == "" {
				return nil, false
			}
			v, ok := c[seg.Field]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if seg.Field != "" || seg.Index >= len(c) {
				return nil, false
			}
			cur = c[seg.Index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Set writes value at p into the apply configuration cfg. Maps on the way
// are created as needed. A list on the way is copied whole from live (the
// target as it is): lists in most schemas are atomic, so an apply must carry
// every element, and the whole list then belongs to nudge's field manager.
// It returns an error wrapping ErrFieldPath when live has no element at an
// index of p, or a field on the way is not an object.
func (p Path) Set(cfg, live map[string]any, value any) error {
	var cur any = cfg
	var liveCur any = live
	for i, seg := range p {
		last := i == len(p)-1
		if seg.Field == "" {
			return fmt.Errorf("%w %s: an index must follow a list", ErrFieldPath, p)
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("%w %s: %s is not an object", ErrFieldPath, p, p[:i])
		}
		liveNext := childOf(liveCur, seg)
		if last {
			m[seg.Field] = value
			return nil
		}
		if p[i+1].Field == "" {
			next, err := p.setList(m, seg.Field, liveNext, i+1)
			if err != nil {
				return err
			}
			rest := p[i+2:]
			if len(rest) == 0 {
				next.list[next.index] = value
				m[seg.Field] = next.list
				return nil
			}
			return rest.Set(next.elem, next.liveElem, value)
		}
		child, ok := m[seg.Field].(map[string]any)
		if !ok {
			child = map[string]any{}
			m[seg.Field] = child
		}
		cur, liveCur = child, liveNext
	}
	return nil
}

// listStep is a list copied from the live object, and the element an index
// selects in it.
type listStep struct {
	list     []any
	index    int
	elem     map[string]any
	liveElem map[string]any
}

// setList copies into m[field] the live list at field (unless an earlier
// path already did), and returns the element p[at] selects.
func (p Path) setList(m map[string]any, field string, live any, at int) (listStep, error) {
	idx := p[at].Index
	list, ok := m[field].([]any)
	if !ok {
		liveList, isList := live.([]any)
		if !isList || idx >= len(liveList) {
			return listStep{}, fmt.Errorf("%w %s: the target has no element %s", ErrFieldPath, p, p[:at+1])
		}
		list = deepCopyList(liveList)
		m[field] = list
	}
	if idx >= len(list) {
		return listStep{}, fmt.Errorf("%w %s: the target has no element %s", ErrFieldPath, p, p[:at+1])
	}
	elem, _ := list[idx].(map[string]any)
	liveElem := elem
	if at+1 < len(p) && elem == nil {
		return listStep{}, fmt.Errorf("%w %s: %s is not an object", ErrFieldPath, p, p[:at+1])
	}
	return listStep{list: list, index: idx, elem: elem, liveElem: liveElem}, nil
}

func childOf(v any, seg Segment) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	return m[seg.Field]
}

func deepCopyList(l []any) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopyValue(e)
		}
		return m
	case []any:
		return deepCopyList(t)
	}
	return v
}
