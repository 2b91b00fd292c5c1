package refs

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMerge(t *testing.T) {
	tests := map[string]struct {
		in   []Reference
		want []Reference
	}{
		"no references merge to an empty list": {
			in:   nil,
			want: []Reference{},
		},
		"key sets of one source are united, sorted and deduplicated": {
			in:   []Reference{cm("a", "y", "x"), cm("a", "x", "z")},
			want: []Reference{cm("a", "x", "y", "z")},
		},
		"a whole use after key uses makes the reference whole": {
			in:   []Reference{cm("a", "x"), cm("a")},
			want: []Reference{cm("a")},
		},
		"key uses after a whole use leave it whole": {
			in:   []Reference{cm("a"), cm("a", "x")},
			want: []Reference{cm("a")},
		},
		"optional and required uses merge to required": {
			in:   []Reference{optional(secret("s")), secret("s", "k")},
			want: []Reference{secret("s")},
		},
		"only optional uses merge to optional": {
			in:   []Reference{optional(secret("s", "a")), optional(secret("s", "b"))},
			want: []Reference{optional(secret("s", "a", "b"))},
		},
		"an empty key set is not the whole object": {
			in:   []Reference{cm("a", []string{}...)},
			want: []Reference{{Source: cm("a").Source, Keys: []string{}}},
		},
		"sources of other namespaces stay apart and sort by namespace": {
			in: []Reference{
				{Source: Source{Kind: Secret, Namespace: "b", Name: "s"}},
				{Source: Source{Kind: Secret, Namespace: "a", Name: "s"}},
				{Source: Source{Kind: ConfigMap, Namespace: "z", Name: "s"}},
			},
			want: []Reference{
				{Source: Source{Kind: ConfigMap, Namespace: "z", Name: "s"}},
				{Source: Source{Kind: Secret, Namespace: "a", Name: "s"}},
				{Source: Source{Kind: Secret, Namespace: "b", Name: "s"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Merge(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestMergeLeavesItsInputAlone(t *testing.T) {
	g := NewWithT(t)
	in := []Reference{cm("a", "y", "x"), cm("a", "z")}
	Merge(in)
	g.Expect(in).To(Equal([]Reference{cm("a", "y", "x"), cm("a", "z")}))
}

func TestSourceString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Source{Kind: Secret, Namespace: "shop", Name: "db"}.String()).To(Equal("Secret/shop/db"))
}

func TestSelectorKinds(t *testing.T) {
	tests := map[string]struct {
		kind, selects, selector Kind
	}{
		"a ConfigMap selector matches ConfigMaps":    {kind: ConfigMapSelector, selects: ConfigMap},
		"a Secret selector matches Secrets":          {kind: SecretSelector, selects: Secret},
		"a ConfigMap has a selector kind":            {kind: ConfigMap, selector: ConfigMapSelector},
		"a Secret has a selector kind":               {kind: Secret, selector: SecretSelector},
		"a SecretProviderClass has no selector kind": {kind: SecretProviderClass},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			selects, ok := tt.kind.Selects()
			g.Expect(selects).To(Equal(tt.selects))
			g.Expect(ok).To(Equal(tt.selects != ""))
			selector, ok := SelectorOf(tt.kind)
			g.Expect(selector).To(Equal(tt.selector))
			g.Expect(ok).To(Equal(tt.selector != ""))
		})
	}
}
