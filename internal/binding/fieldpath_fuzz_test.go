package binding

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParsePath reads any field path: ParsePath never panics, refuses with
// ErrFieldPath, or returns a path that starts with a field nudge may write,
// that String writes back to a form ParsePath reads as the same path, and
// that String writes again byte for byte.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"spec.imageChartStorage.s3.accesskey", "spec.list[0].b", "metadata.annotations['example.io/key']",
		`metadata.labels["a.b/c"]`, "spec['a b'].c[12]", "status.x", "metadata.name", "a..b", "a[", "a['x]", "['spec'][0]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			if !errors.Is(err, ErrFieldPath) {
				t.Fatalf("ParsePath(%q) = %v, not ErrFieldPath", s, err)
			}
			return
		}
		switch first := p[0].Field; {
		case first == "" || first == "apiVersion" || first == "kind" || first == "status":
			t.Fatalf("ParsePath(%q) starts with %q", s, first)
		case first == "metadata" && (len(p) != 3 || (p[1].Field != "labels" && p[1].Field != "annotations")):
			t.Fatalf("ParsePath(%q) writes metadata %v", s, p)
		}
		written := p.String()
		again, err := ParsePath(written)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("ParsePath(%q) = %v; written %q, read back as %v, %v", s, p, written, again, err)
		}
		if twice := again.String(); twice != written {
			t.Fatalf("String is not stable: %q then %q", written, twice)
		}
	})
}
