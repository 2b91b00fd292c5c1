package binding_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/binding"
)

func f(name string) binding.Segment { return binding.Segment{Field: name} }
func i(n int) binding.Segment       { return binding.Segment{Index: n} }

func TestParsePath(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    binding.Path
		wantErr string
	}{
		"dotted fields are a path":                     {in: "spec.imageChartStorage.s3.accesskey", want: binding.Path{f("spec"), f("imageChartStorage"), f("s3"), f("accesskey")}},
		"a list index selects an element":              {in: "spec.list[0].b", want: binding.Path{f("spec"), f("list"), i(0), f("b")}},
		"a quoted field may hold dots and slashes":     {in: "metadata.annotations['x.io/y']", want: binding.Path{f("metadata"), f("annotations"), f("x.io/y")}},
		"double quotes work too":                       {in: `metadata.labels["app.kubernetes.io/name"]`, want: binding.Path{f("metadata"), f("labels"), f("app.kubernetes.io/name")}},
		"a quoted field may follow a field":            {in: "spec['a.b'].c", want: binding.Path{f("spec"), f("a.b"), f("c")}},
		"an index may end the path":                    {in: "spec.args[2]", want: binding.Path{f("spec"), f("args"), i(2)}},
		"an empty path is refused":                     {in: "", wantErr: "must start with a field name"},
		"a leading dot is refused":                     {in: ".spec.a", wantErr: "empty field name"},
		"two dots are refused":                         {in: "spec..a", wantErr: "empty field name"},
		"a trailing dot is refused":                    {in: "spec.a.", wantErr: "empty field name"},
		"an unterminated bracket is refused":           {in: "spec.list[0", wantErr: "unterminated"},
		"a negative index is refused":                  {in: "spec.list[-1]", wantErr: "neither a list index nor a quoted field"},
		"a word in brackets is refused":                {in: "spec.list[a]", wantErr: "neither a list index nor a quoted field"},
		"an empty quoted field is refused":             {in: "spec['']", wantErr: "malformed quoted field"},
		"an unbalanced quote is refused":               {in: "spec['a\"]", wantErr: "malformed quoted field"},
		"a name right after a bracket is refused":      {in: "spec.list[0]b", wantErr: "must follow a dot"},
		"a path starting with an index is refused":     {in: "[0].a", wantErr: "must start with a field name"},
		"status is a subresource nudge does not write": {in: "status.phase", wantErr: "nudge does not write status"},
		"kind is not a field to bind":                  {in: "kind", wantErr: "nudge does not write kind"},
		"the name is not a field to bind":              {in: "metadata.name", wantErr: "only a label or an annotation"},
		"a whole annotations map is not a field":       {in: "metadata.annotations", wantErr: "only a label or an annotation"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := binding.ParsePath(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(binding.ErrFieldPath))
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			again, err := binding.ParsePath(got.String())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(Equal(got), "String reads back as the same path: %s", got)
		})
	}
}

func TestPathGetSet(t *testing.T) {
	live := func() map[string]any {
		return map[string]any{
			"spec": map[string]any{
				"s3":   map[string]any{"region": "eu", "bucket": "b"},
				"list": []any{map[string]any{"a": "x", "b": "old"}, map[string]any{"a": "y"}},
			},
		}
	}
	tests := map[string]struct {
		path    string
		value   any
		want    map[string]any
		wantErr string
		get     any
	}{
		"a nested field is set alone, its siblings left out": {
			path: "spec.s3.accesskey", value: "AK",
			want: map[string]any{"spec": map[string]any{"s3": map[string]any{"accesskey": "AK"}}},
		},
		"a field in a list element carries the whole list, copied from the target": {
			path: "spec.list[0].b", value: "new", get: "old",
			want: map[string]any{"spec": map[string]any{"list": []any{map[string]any{"a": "x", "b": "new"}, map[string]any{"a": "y"}}}},
		},
		"an annotation is set by its quoted name": {
			path: "metadata.annotations['x.io/y']", value: "v",
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"x.io/y": "v"}}},
		},
		"an index beyond the target's list is refused": {
			path: "spec.list[5].b", value: "v", wantErr: "the target has no element spec.list[5]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := binding.ParsePath(tc.path)
			g.Expect(err).NotTo(HaveOccurred())
			l := live()
			if tc.get != nil {
				v, ok := p.Get(l)
				g.Expect(ok).To(BeTrue())
				g.Expect(v).To(Equal(tc.get))
			}
			cfg := map[string]any{}
			err = p.Set(cfg, l, tc.value)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg).To(Equal(tc.want))
			g.Expect(l).To(Equal(live()), "the target's object is not changed")
			v, ok := p.Get(cfg)
			g.Expect(ok).To(BeTrue())
			g.Expect(v).To(Equal(tc.value))
		})
	}
}
