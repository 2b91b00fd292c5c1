package fingerprint_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

func key(b byte) fingerprint.Key {
	k, err := fingerprint.NewKey(bytes.Repeat([]byte{b}, fingerprint.KeySize))
	if err != nil {
		panic(err)
	}
	return k
}

func TestNewKey(t *testing.T) {
	g := NewWithT(t)
	_, err := fingerprint.NewKey([]byte("short"))
	g.Expect(err).To(MatchError(fingerprint.ErrKeySize))
	k := key(1)
	g.Expect(k.ID()).To(MatchRegexp(`^[0-9a-f]{8}$`))
	g.Expect(key(2).ID()).NotTo(Equal(k.ID()))
}

func TestSource(t *testing.T) {
	src := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	whole := refs.Reference{Source: src}
	onlyUser := refs.Reference{Source: src, Keys: []string{"user"}}
	d := fingerprint.Digests{"user": fingerprint.Sum([]byte("admin")), "password": fingerprint.Sum([]byte("hunter2"))}
	with := func(k, v string) fingerprint.Digests {
		out := fingerprint.Digests{}
		for kk, vv := range d {
			out[kk] = vv
		}
		out[k] = fingerprint.Sum([]byte(v))
		return out
	}
	without := func(k string) fingerprint.Digests {
		out := with("x", "")
		delete(out, "x")
		delete(out, k)
		return out
	}
	tests := map[string]struct {
		a, b     string
		wantSame bool
	}{
		"the same content gives the same digest": {
			a: key(1).Source(whole, d), b: key(1).Source(whole, with("user", "admin")), wantSame: true,
		},
		"a changed value changes a whole reference": {
			a: key(1).Source(whole, d), b: key(1).Source(whole, with("password", "hunter3")),
		},
		"a changed unread key leaves a key reference alone": {
			a: key(1).Source(onlyUser, d), b: key(1).Source(onlyUser, with("password", "hunter3")), wantSame: true,
		},
		"a changed read key changes a key reference": {
			a: key(1).Source(onlyUser, d), b: key(1).Source(onlyUser, with("user", "root")),
		},
		"a removed read key changes a key reference": {
			a: key(1).Source(onlyUser, d), b: key(1).Source(onlyUser, without("user")),
		},
		"an added key changes a whole reference": {
			a: key(1).Source(whole, d), b: key(1).Source(whole, with("extra", "")),
		},
		"another key gives another digest": {
			a: key(1).Source(whole, d), b: key(2).Source(whole, d),
		},
		"another source name gives another digest": {
			a: key(1).Source(whole, d), b: key(1).Source(refs.Reference{Source: refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db2"}}, d),
		},
		"another kind gives another digest": {
			a: key(1).Source(whole, d), b: key(1).Source(refs.Reference{Source: refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "db"}}, d),
		},
		"field boundaries are unambiguous": {
			a: key(1).Source(refs.Reference{Source: refs.Source{Kind: refs.Secret, Namespace: "ab", Name: "c"}}, nil),
			b: key(1).Source(refs.Reference{Source: refs.Source{Kind: refs.Secret, Namespace: "a", Name: "bc"}}, nil),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.a).To(HaveLen(16))
			g.Expect(tc.a).To(MatchRegexp(`^[A-Za-z0-9_-]{16}$`))
			if tc.wantSame {
				g.Expect(tc.b).To(Equal(tc.a))
			} else {
				g.Expect(tc.b).NotTo(Equal(tc.a))
			}
		})
	}
}

func TestShape(t *testing.T) {
	g := NewWithT(t)
	src := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	g.Expect(fingerprint.Shape(refs.Reference{Source: src})).To(BeEmpty())
	a := fingerprint.Shape(refs.Reference{Source: src, Keys: []string{"a"}})
	g.Expect(a).To(HaveLen(6))
	g.Expect(fingerprint.Shape(refs.Reference{Source: src, Keys: []string{"a", "b"}})).NotTo(Equal(a))
	g.Expect(fingerprint.Shape(refs.Reference{Source: src, Keys: []string{}})).NotTo(BeEmpty(), "an empty key set is not the whole object")
}

func TestStateRoundTrip(t *testing.T) {
	tests := map[string]fingerprint.State{
		"no sources": {KeyID: "0a1b2c3d", Entries: map[refs.Source]fingerprint.Entry{}},
		"sources in the workload's and another namespace": {KeyID: "0a1b2c3d", Entries: map[refs.Source]fingerprint.Entry{
			{Kind: refs.ConfigMap, Namespace: "shop", Name: "app.cfg"}: {Digest: "AAAAAAAAAAAAAAAA"},
			{Kind: refs.Secret, Namespace: "shop", Name: "db"}:         {Shape: "Hk2-_a", Digest: "BBBBBBBBBBBBBBBB"},
			{Kind: refs.ConfigMap, Namespace: "shared", Name: "ca"}:    {Digest: fingerprint.Absent},
		}},
		"a Secrets Store CSI SecretProviderClass": {KeyID: "0a1b2c3d", Entries: map[refs.Source]fingerprint.Entry{
			{Kind: refs.SecretProviderClass, Namespace: "shop", Name: "vault-db"}: {Digest: "CCCCCCCCCCCCCCCC"},
		}},
		"label selectors, their names escaped": {KeyID: "0a1b2c3d", Entries: map[refs.Source]fingerprint.Entry{
			{Kind: refs.ConfigMapSelector, Namespace: "shop", Name: "app.kubernetes.io/name=grafana,tier in (a,b)"}: {Digest: "DDDDDDDDDDDDDDDD"},
			{Kind: refs.SecretSelector, Namespace: "shop", Name: "!x,y!=z"}:                                         {Digest: "EEEEEEEEEEEEEEEE"},
		}},
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			v := s.Format("shop")
			g.Expect(v).To(HavePrefix("v1.0a1b2c3d"))
			got, err := fingerprint.Parse(v, "shop")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Equal(s)).To(BeTrue(), "round trip of %q", v)
		})
	}
	g := NewWithT(t)
	v := tests["sources in the workload's and another namespace"].Format("shop")
	g.Expect(v).To(Equal("v1.0a1b2c3d ConfigMap/shared/ca=- ConfigMap/app.cfg=AAAAAAAAAAAAAAAA Secret/db:Hk2-_a=BBBBBBBBBBBBBBBB"))
	v = tests["label selectors, their names escaped"].Format("shop")
	g.Expect(v).To(Equal("v1.0a1b2c3d ConfigMapSelector/app.kubernetes.io%2Fname%3Dgrafana%2Ctier+in+%28a%2Cb%29=DDDDDDDDDDDDDDDD SecretSelector/%21x%2Cy%21%3Dz=EEEEEEEEEEEEEEEE"))
}

func TestParseRejects(t *testing.T) {
	for name, v := range map[string]string{
		"an empty value":            "",
		"another version":           "v2.0a1b2c3d",
		"no key id":                 "v1.",
		"an entry without a digest": "v1.k ConfigMap/a",
		"an empty digest":           "v1.k ConfigMap/a=",
		"an unknown kind":           "v1.k Pod/a=AAAA",
		"too many slashes":          "v1.k ConfigMap/a/b/c=AAAA",
		"a Reloader hash":           "9ff99bd578c45053d076640b122ec309c61d3b7e",
		"a selector badly escaped":  "v1.k ConfigMapSelector/app%3=AAAA",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := fingerprint.Parse(v, "shop")
			g.Expect(err).To(MatchError(fingerprint.ErrState))
		})
	}
}

func TestSeal(t *testing.T) {
	g := NewWithT(t)
	s := key(1).Seal("v1.abc ConfigMap/a=AAAA")
	g.Expect(s).To(MatchRegexp(`^[0-9a-f]{32}$`), "a valid label value")
	g.Expect(key(1).Seal("v1.abc ConfigMap/a=AAAA")).To(Equal(s))
	g.Expect(key(1).Seal("v1.abc ConfigMap/a=AAAB")).NotTo(Equal(s))
	g.Expect(key(2).Seal("v1.abc ConfigMap/a=AAAA")).NotTo(Equal(s))
}

func TestSumString(t *testing.T) {
	for _, v := range []string{"", "a", strings.Repeat("value ", 2000)} {
		want := sha256.Sum256([]byte(v))
		if got := fingerprint.SumString(v); got != string(want[:]) || got != fingerprint.Sum([]byte(v)) {
			t.Errorf("SumString(%d bytes) = %x, want %x", len(v), got, want)
		}
	}
}

func TestVersions(t *testing.T) {
	type ov = fingerprint.ObjectVersion
	one := fingerprint.Versions([]ov{{"db/password", "v1"}, {"db/user", "v7"}})
	tests := map[string]struct {
		pods [][]ov
		same bool
	}{
		"another pod with the same versions changes nothing": {
			pods: [][]ov{{{"db/password", "v1"}, {"db/user", "v7"}}, {{"db/user", "v7"}, {"db/password", "v1"}}},
			same: true,
		},
		"the order of objects changes nothing": {
			pods: [][]ov{{{"db/user", "v7"}, {"db/password", "v1"}}},
			same: true,
		},
		"a rotation of one object is a change": {
			pods: [][]ov{{{"db/password", "v2"}, {"db/user", "v7"}}},
		},
		"one pod still on the old version beside a rotated one is a change": {
			pods: [][]ov{{{"db/password", "v1"}, {"db/user", "v7"}}, {{"db/password", "v2"}, {"db/user", "v7"}}},
		},
		"an object more is a change": {
			pods: [][]ov{{{"db/password", "v1"}, {"db/user", "v7"}, {"db/host", "v1"}}},
		},
		"versions are not run together": {
			pods: [][]ov{{{"db/password", "v"}, {"db/password", "1"}, {"db/user", "v7"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := fingerprint.Versions(tc.pods...)
			g.Expect(got).To(HaveKey("db/password"))
			if tc.same {
				g.Expect(got).To(Equal(one))
			} else {
				g.Expect(got).NotTo(Equal(one))
			}
		})
	}
}
