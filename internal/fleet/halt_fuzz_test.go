package fleet

import "testing"

// FuzzParseHalt reads any nudge.dev/halted value, which whoever may
// annotate a workload writes: ParseHalt never panics, and a Halt it reads
// has a digest and is written by formatHalt to a value it reads as the same
// Halt. (It reads "//=0" as a Halt of a source with no kind, namespace or
// name: parseDigests keeps empty parts.)
func FuzzParseHalt(f *testing.F) {
	f.Add("ConfigMap/shop/app=k1.abcdefghijklmnop Deployment/shop/canary")
	f.Add("  Secret/shop/db=x   Deployment/shop/a b/c ")
	f.Add("ConfigMap/shop/app=")
	f.Add("ConfigMap/shop=x Deployment/shop/canary")
	f.Add("a/b/c=d")
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := ParseHalt(v)
		if !ok {
			return
		}
		if h.Digest == "" {
			t.Fatalf("ParseHalt(%q) = %+v: no digest", v, h)
		}
		written := formatHalt(h.Source, h.Digest, h.After)
		again, ok := ParseHalt(written)
		if !ok || again != h {
			t.Fatalf("ParseHalt(%q) = %+v; written %q, read back as %+v, %v", v, h, written, again, ok)
		}
	})
}
