package fleet

import (
	"strings"
	"testing"

	"nudge.dev/nudge/internal/refs"
)

// FuzzParseDigests reads any annotation value: parseDigests never panics,
// returns at most one entry per field, only ConfigMaps and Secrets with a
// namespace, a name and a digest within their bounds and free of the
// separators, copies that keep nothing of the value alive, and entries
// that, written back, read the same.
func FuzzParseDigests(f *testing.F) {
	f.Add("ConfigMap/shop/app=0a1b2c3d.abcdefghijklmnop Secret/shop/db=absent")
	f.Add("seal=0123456789abcdef0123456789abcdef ConfigMap/shop/app=0a1b2c3d.abcdefghijklmnop")
	f.Add("  ConfigMap/shop/app=k.d\t\nSecret/a/b=c  ")
	f.Add("Pod/shop/web=x SecretProviderClass/shop/vault=y ConfigMap/app=z ConfigMap/a/b/c=d ConfigMap//x=y ConfigMap/x/=y ConfigMap/x/y=")
	f.Add("ConfigMap/shop/app=a=b Secret/shop/db==")
	f.Add("ConfigMap/" + strings.Repeat("n", 64) + "/app=d Secret/shop/" + strings.Repeat("x", 254) + "=d ConfigMap/a/b=" + strings.Repeat("d", 65))
	f.Add("ConfigMap/shop/app=d Deployment/shop/canary")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		sds := parseDigests(v)
		if fields := len(strings.Fields(v)); len(sds) > fields {
			t.Fatalf("parseDigests(%q) = %d entries of %d fields", v, len(sds), fields)
		}
		var parts []string
		for _, sd := range sds {
			src := sd.source
			switch {
			case src.Kind != refs.ConfigMap && src.Kind != refs.Secret,
				!separated(src.Namespace) || len(src.Namespace) > maxNamespace,
				!separated(src.Name) || len(src.Name) > maxName,
				!separated(sd.digest) || len(sd.digest) > maxDigest:
				t.Fatalf("parseDigests(%q) holds %+v", v, sd)
			}
			for _, s := range []string{src.Namespace, src.Name, sd.digest} {
				if aliases(s, v) {
					t.Fatalf("parseDigests(%q) keeps %q within the value", v, s)
				}
			}
			parts = append(parts, src.String()+"="+sd.digest)
		}
		again := parseDigests(strings.Join(parts, " "))
		if len(again) != len(sds) {
			t.Fatalf("parseDigests(%q) = %+v; written back as %q, read as %+v", v, sds, parts, again)
		}
		for i := range sds {
			if again[i] != sds[i] {
				t.Fatalf("parseDigests(%q) = %+v; written back as %q, read as %+v", v, sds, parts, again)
			}
		}
	})
}

// separated reports whether s is non-empty, without white space and without
// the separators '/' and '='.
func separated(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/=") && len(strings.Fields(s)) == 1 && strings.Fields(s)[0] == s
}
