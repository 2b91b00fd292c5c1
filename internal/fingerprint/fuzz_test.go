package fingerprint_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// FuzzParse reads any annotation value: Parse never panics, refuses with
// ErrState, or returns a State that Format writes back to a value Parse reads
// as the same State, and that Format writes again byte for byte.
func FuzzParse(f *testing.F) {
	f.Add("v1.0a1b2c3d ConfigMap/app=abcdefghijklmnop Secret/db:Xy_9-z=-", "shop")
	f.Add("v1.0a1b2c3d ConfigMap/shared/ca=abcdefghijklmnop ConfigMap/shop/app=q", "shop")
	f.Add("v1.k", "shop")
	f.Add("  v1.k \t Secret/a=b\n", "")
	f.Add("v2.k Secret/a=b", "shop")
	f.Add("v1.k Secret/a/b/c=d Pod/x=y Secret/=z ConfigMap/a:=b ConfigMap/a:b:c=d=e", "shop")
	f.Add("v1.k ConfigMapSelector/app%3Ddash=abcdefghijklmnop SecretSelector/x/tier+in+%28a%2Cb%29=q", "shop")
	f.Add("v1.k ConfigMapSelector/%zz=a SecretSelector/%=b", "shop")
	f.Fuzz(func(t *testing.T, v, namespace string) {
		s, err := fingerprint.Parse(v, namespace)
		if err != nil {
			if !errors.Is(err, fingerprint.ErrState) {
				t.Fatalf("Parse(%q) = %v, not ErrState", v, err)
			}
			return
		}
		if s.KeyID == "" {
			t.Fatalf("Parse(%q) has no key id", v)
		}
		for src := range s.Entries {
			_, selector := src.Kind.Selects()
			if (src.Kind != refs.ConfigMap && src.Kind != refs.Secret && src.Kind != refs.SecretProviderClass && !selector) || src.Name == "" || src.Namespace == "" {
				t.Fatalf("Parse(%q) holds entry %v", v, src)
			}
		}
		formatted := s.Format(namespace)
		again, err := fingerprint.Parse(formatted, namespace)
		if err != nil || !again.Equal(s) {
			t.Fatalf("Parse(%q) = %+v; formatted %q, read back as %+v, %v", v, s, formatted, again, err)
		}
		if twice := again.Format(namespace); twice != formatted {
			t.Fatalf("Format is not stable: %q then %q", formatted, twice)
		}
	})
}

// FuzzFormat builds a State of up to two entries from the fields Format
// promises to separate (no space, '/', ':' or '=' in names, namespaces,
// kinds and shapes) and checks that Parse reads Format's value back as that
// State.
func FuzzFormat(f *testing.F) {
	f.Add("0a1b2c3d", "shop", false, "shop", "app", "", "abcdefghijklmnop", true, "vault", "db", "Xy_9-z", "-")
	f.Add("k", "shop", true, "shop", "app", "", "-", true, "shop", "app", "", "-")
	f.Add("k.k", "a", true, "b", "c", "d", "e=f:g/h", false, "", "", "", "")
	f.Fuzz(func(t *testing.T, keyID, namespace string,
		secret1 bool, ns1, name1, shape1, digest1 string,
		secret2 bool, ns2, name2, shape2, digest2 string,
	) {
		s := fingerprint.State{KeyID: keyID, Entries: map[refs.Source]fingerprint.Entry{}}
		add := func(secret bool, ns, name, shape, digest string) {
			if !separated(ns) || !separated(name) || !separated(shape) && shape != "" || !token(digest) {
				return
			}
			src := refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: name}
			if secret {
				src.Kind = refs.Secret
			}
			s.Entries[src] = fingerprint.Entry{Shape: shape, Digest: digest}
		}
		add(secret1, ns1, name1, shape1, digest1)
		add(secret2, ns2, name2, shape2, digest2)
		if !token(keyID) || !separated(namespace) {
			return
		}
		v := s.Format(namespace)
		got, err := fingerprint.Parse(v, namespace)
		if err != nil || !got.Equal(s) {
			t.Fatalf("Format(%+v) = %q, read back as %+v, %v", s, v, got, err)
		}
	})
}

// token reports whether v is a non-empty run of characters other than white
// space, as a digest or key id is.
func token(v string) bool {
	return v != "" && !strings.ContainsFunc(v, unicode.IsSpace)
}

// separated reports whether v is a token without the separators '/', ':' and
// '=', as a name, namespace or shape is.
func separated(v string) bool {
	return token(v) && !strings.ContainsAny(v, "/:=")
}
