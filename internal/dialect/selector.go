package dialect

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/refs"
)

// ErrBadSelector: a selector annotation is not a label selector in kubectl's
// syntax (labels.Parse), or is empty (it would match every source of its
// kind in the namespace).
var ErrBadSelector error = &malformed{"invalid label selector"}

// Selected is a label selector annotation of a workload: the sources of
// Kind in Namespace that Selector matches count for the workload as one
// set, one reference (Source) whose content is every match's name and
// content.
type Selected struct {
	// Kind is refs.ConfigMap or refs.Secret: the kind of the sources matched.
	Kind refs.Kind
	// Namespace is the workload's namespace: a selector matches there only.
	Namespace string
	// Selector is the annotation's selector, parsed; never empty.
	Selector labels.Selector
}

// Source returns the reference the set stands for: kind
// refs.ConfigMapSelector or refs.SecretSelector, the namespace, and the
// selector in its canonical form (labels.Selector.String: requirements
// sorted by key, values sorted) as the name.
func (s Selected) Source() refs.Source {
	kind, _ := refs.SelectorOf(s.Kind)
	return refs.Source{Kind: kind, Namespace: s.Namespace, Name: s.Selector.String()}
}

// Matches reports whether src, whose labels are given, is in the set: of
// s's kind and namespace, its labels matched by s.Selector.
func (s Selected) Matches(src refs.Source, l labels.Labels) bool {
	return src.Kind == s.Kind && src.Namespace == s.Namespace && s.Selector.Matches(l)
}

// ParseSelector reads the value of a selector annotation: a label selector
// in kubectl's syntax (labels.Parse), not empty. It returns an error
// wrapping ErrBadSelector otherwise.
func ParseSelector(v string) (labels.Selector, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%w %q: empty; it would match every source of the namespace, write a requirement such as \"app=dash\"", ErrBadSelector, v)
	}
	sel, err := labels.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadSelector, v, err)
	}
	return sel, nil
}

// selector reads a selector annotation of kind's sources from src.
func (p *parser) selector(src source, key string, kind refs.Kind) {
	v, found := src.values[key]
	if !found {
		return
	}
	sel, err := ParseSelector(v)
	if err != nil {
		p.fail(src, key, err)
		return
	}
	p.spec.Selectors = append(p.spec.Selectors, Selected{Kind: kind, Namespace: p.namespace, Selector: sel})
}
