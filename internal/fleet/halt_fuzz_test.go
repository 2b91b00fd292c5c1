package fleet

import "testing"

// FuzzParseHalt reads any nudge.dev/halted value, which whoever may
// annotate a workload writes: ParseHalt never panics, and a Halt it reads
// has a digest and is written by formatHalt to a value it reads as the same
// Halt of a ConfigMap or Secret with a namespace and a name ("//=0" is
// refused).
func FuzzParseHalt(f *testing.F) {
	f.Add("ConfigMap/shop/app=k1.abcdefghijklmnop Deployment/shop/canary")
	f.Add("  Secret/shop/db=x   Deployment/shop/a b/c ")
	f.Add("ConfigMap/shop/app=")
	f.Add("ConfigMap/shop=x Deployment/shop/canary")
	f.Add("a/b/c=d")
	f.Add("//=0")
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := ParseHalt(v)
		if !ok {
			return
		}
		if h.Digest == "" || h.Source.Namespace == "" || h.Source.Name == "" {
			t.Fatalf("ParseHalt(%q) = %+v: no digest, namespace or name", v, h)
		}
		written := formatHalt(h.Source, h.Digest, h.After)
		again, ok := ParseHalt(written)
		if !ok || again != h {
			t.Fatalf("ParseHalt(%q) = %+v; written %q, read back as %+v, %v", v, h, written, again, ok)
		}
	})
}
