package producer

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// externalSecret is an ExternalSecret of generation 2 as the API serves it,
// writing target ("" for its own name), with status (nil for none).
func externalSecret(target string, status map[string]any) *unstructured.Unstructured {
	u := object(ExternalSecret.WithVersion("v1"))
	u.SetNamespace("shop")
	u.SetName("db")
	u.SetUID("6d1f")
	u.SetResourceVersion("41")
	u.SetGeneration(2)
	u.SetLabels(map[string]string{"team": "shop"})
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"ExternalSecret"}`})
	u.Object["spec"] = map[string]any{
		"refreshInterval": "1h",
		"secretStoreRef":  map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
		"target":          map[string]any{"creationPolicy": "Owner"},
		"data":            []any{map[string]any{"secretKey": "password", "remoteRef": map[string]any{"key": "db/password"}}},
	}
	if target != "" {
		_ = unstructured.SetNestedField(u.Object, target, "spec", "target", "name")
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// certificate is a Certificate of generation 3 writing the Secret "tls",
// with status (nil for none).
func certificate(status map[string]any) *unstructured.Unstructured {
	u := object(Certificate.WithVersion("v1"))
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetResourceVersion("77")
	u.SetGeneration(3)
	u.Object["spec"] = map[string]any{"secretName": "tls", "dnsNames": []any{"shop.example.com"},
		"issuerRef": map[string]any{"name": "letsencrypt", "kind": "ClusterIssuer"}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// ready is a Ready condition; observed 0 leaves its observedGeneration out.
func ready(status, reason, message string, observed int64) map[string]any {
	c := map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message,
		"lastTransitionTime": "2026-11-27T10:00:00Z"}
	if observed != 0 {
		c["observedGeneration"] = observed
	}
	return c
}

// conditions is a status holding conds.
func conditions(conds ...map[string]any) map[string]any {
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	return map[string]any{"conditions": list}
}

// with returns m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func TestStatusOf(t *testing.T) {
	es := Ref{GroupKind: ExternalSecret, Namespace: "shop", Name: "db"}
	cert := Ref{GroupKind: Certificate, Namespace: "shop", Name: "web"}
	synced := ready("True", "SecretSynced", "secret synced", 0)
	tests := map[string]struct {
		ref    Ref
		secret string
		obj    *unstructured.Unstructured
		want   Status
	}{
		"a producer not in the cache is not known": {
			ref: es, secret: "db", obj: nil,
		},
		"an ExternalSecret synced at its generation is ready": {
			ref: es, secret: "db", obj: externalSecret("", with(conditions(synced), "syncedResourceVersion", "2-9f86d081884c7d659a2feaa0c55ad015")),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Ready: true},
		},
		"an ExternalSecret writes the Secret spec.target.name names": {
			ref: es, secret: "db-creds", obj: externalSecret("db-creds", with(conditions(synced), "syncedResourceVersion", "2-9f86d0")),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Ready: true},
		},
		"an ExternalSecret that writes another Secret is not known for this one": {
			ref: es, secret: "db", obj: externalSecret("db-creds", conditions(synced)),
		},
		"an ExternalSecret last synced at an older generation is not ready": {
			ref: es, secret: "db", obj: externalSecret("", with(conditions(synced), "syncedResourceVersion", "1-9f86d0")),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Reason: "last synced generation 1, not 2 yet"},
		},
		"an ExternalSecret whose sync failed is not ready, and says why": {
			ref: es, secret: "db", obj: externalSecret("", with(conditions(ready("False", "SecretSyncedError", "could not get secret data from provider", 0)), "syncedResourceVersion", "2-9f86d0")),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Reason: "Ready is False: SecretSyncedError: could not get secret data from provider"},
		},
		"an ExternalSecret with no status yet is not ready": {
			ref: es, secret: "db", obj: externalSecret("", nil),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Reason: "no Ready condition yet"},
		},
		"a Ready condition of another type does not count": {
			ref: es, secret: "db", obj: externalSecret("", conditions(map[string]any{"type": "Deleted", "status": "True"})),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Reason: "no Ready condition yet"},
		},
		"a Ready condition with no status is Unknown": {
			ref: es, secret: "db", obj: externalSecret("", conditions(map[string]any{"type": "Ready"})),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Reason: "Ready is Unknown"},
		},
		"a syncedResourceVersion without a generation is not compared": {
			ref: es, secret: "db", obj: externalSecret("", with(conditions(synced), "syncedResourceVersion", "abc")),
			want: Status{Known: true, Producer: "ExternalSecret shop/db", Ready: true},
		},
		"a Certificate whose Ready condition observed its generation is ready": {
			ref: cert, secret: "tls", obj: certificate(conditions(ready("True", "Ready", "Certificate is up to date and has not expired", 3))),
			want: Status{Known: true, Producer: "Certificate shop/web", Ready: true},
		},
		"a Certificate whose Ready condition is of an older generation is not ready": {
			ref: cert, secret: "tls", obj: certificate(conditions(ready("True", "Ready", "Certificate is up to date and has not expired", 2))),
			want: Status{Known: true, Producer: "Certificate shop/web", Reason: "Ready condition of generation 2, not 3 yet"},
		},
		"a Certificate being issued is not ready": {
			ref: cert, secret: "tls", obj: certificate(conditions(
				map[string]any{"type": "Issuing", "status": "True"},
				ready("False", "DoesNotExist", "Issuing certificate as Secret does not exist", 3))),
			want: Status{Known: true, Producer: "Certificate shop/web", Reason: "Ready is False: DoesNotExist: Issuing certificate as Secret does not exist"},
		},
		"a status.observedGeneration behind the generation is not ready": {
			ref: cert, secret: "tls", obj: certificate(with(conditions(ready("True", "Ready", "", 0)), "observedGeneration", int64(2))),
			want: Status{Known: true, Producer: "Certificate shop/web", Reason: "status observed generation 2, not 3 yet"},
		},
		"a Certificate that writes another Secret is not known for this one": {
			ref: cert, secret: "web-tls", obj: certificate(conditions(ready("True", "Ready", "", 3))),
		},
		"a long message is cut": {
			ref: cert, secret: "tls", obj: certificate(conditions(ready("False", "Failed", strings.Repeat("é", 100), 3))),
			want: Status{Known: true, Producer: "Certificate shop/web", Reason: "Ready is False: Failed: " + strings.Repeat("é", 58) + "…"},
		},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(StatusOf(tc.ref, tc.secret, tc.obj)).To(Equal(tc.want))
			if tc.obj == nil {
				return
			}
			trimmed := tc.obj.DeepCopy()
			_, err := Trim(trimmed)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(StatusOf(tc.ref, tc.secret, trimmed)).To(Equal(tc.want), "the same from the trimmed object")
		})
	}
}

func TestTrim(t *testing.T) {
	g := NewWithT(t)
	u := externalSecret("db-creds", with(conditions(
		map[string]any{"type": "Deleted", "status": "False"},
		ready("False", "SecretSyncedError", strings.Repeat("x", 500), 0)),
		"syncedResourceVersion", "1-9f86d0"))
	u.Object["status"].(map[string]any)["refreshTime"] = "2026-11-27T10:00:00Z"
	_, err := Trim(u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Object).To(HaveLen(3), "apiVersion, kind, metadata")
	g.Expect(u.GetAPIVersion()).To(Equal("external-secrets.io/v1"))
	g.Expect(u.GetKind()).To(Equal("ExternalSecret"))
	meta := u.Object["metadata"].(map[string]any)
	g.Expect(meta).To(HaveLen(5))
	g.Expect(meta).To(HaveKeyWithValue("name", "db"))
	g.Expect(meta).To(HaveKeyWithValue("namespace", "shop"))
	g.Expect(meta).To(HaveKeyWithValue("resourceVersion", "41"))
	g.Expect(meta).To(HaveKeyWithValue("generation", int64(2)))
	g.Expect(meta["selfLink"]).To(HavePrefix(packedMark))
	g.Expect(read(u, kinds[0])).To(Equal(state{target: "db-creds", generation: 2, synced: "1-9f86d0",
		ready: &condition{status: "False", reason: "SecretSyncedError", message: strings.Repeat("x", maxMessage-len("…")) + "…"}}),
		"of the spec the target's name only, of the status what StatusOf reads")
	again := u.DeepCopy()
	_, _ = Trim(again)
	g.Expect(again).To(Equal(u), "idempotent")

	noTarget := externalSecret("", nil)
	_, _ = Trim(noTarget)
	g.Expect(read(noTarget, kinds[0])).To(Equal(state{target: "db", generation: 2}),
		"an ExternalSecret with no target writes the Secret of its own name, and packs no copy of it")
	g.Expect(noTarget.Object["metadata"].(map[string]any)["selfLink"]).To(Equal(packedMark + "\x00\x00\x00\x00\x00\x00\x00\x00"))

	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)}}}
	before := other.DeepCopy()
	_, _ = Trim(other)
	g.Expect(other).To(Equal(before), "another kind passes unchanged")
}

func TestPack(t *testing.T) {
	tests := map[string]state{
		"nothing":                           {},
		"a target alone":                    {target: "db"},
		"a Ready condition of empty fields": {ready: &condition{}},
		"every field, with bytes that look like lengths": {target: "tls\x05", generation: 9, observed: 8, synced: "8-\x00\xff",
			ready: &condition{status: "True", reason: "Ready", message: strings.Repeat("é", 40) + "\x01", observedGeneration: 1 << 40}},
		"negative generations still round-trip": {observed: -1, ready: &condition{observedGeneration: -7}},
	}
	for desc, s := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			u := object(Certificate.WithVersion("v1"))
			u.SetGeneration(s.generation)
			_ = unstructured.SetNestedField(u.Object, s.pack(), "metadata", "selfLink")
			got, ok := unpack(u)
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(s))
		})
	}
	for desc, link := range map[string]string{
		"no mark":               "/apis/cert-manager.io/v1/namespaces/shop/certificates/web",
		"the mark alone":        packedMark,
		"a length past the end": packedMark + "\x01\x7fdb",
		"no generations":        packedMark + "\x00\x00\x00\x00\x00\x00",
	} {
		t.Run(desc+" is not packed", func(t *testing.T) {
			u := object(Certificate.WithVersion("v1"))
			_ = unstructured.SetNestedField(u.Object, link, "metadata", "selfLink")
			_, ok := unpack(u)
			NewWithT(t).Expect(ok).To(BeFalse())
		})
	}
}

func TestRefOf(t *testing.T) {
	controller := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}
	}
	tests := map[string]struct {
		owners      []metav1.OwnerReference
		annotations map[string]string
		want        Ref
		ok          bool
	}{
		"a Secret an ExternalSecret controls": {
			owners: []metav1.OwnerReference{controller("external-secrets.io/v1", "ExternalSecret", "db")},
			want:   Ref{GroupKind: ExternalSecret, Namespace: "shop", Name: "db"}, ok: true,
		},
		"an ExternalSecret of v1beta1 is the same producer": {
			owners: []metav1.OwnerReference{controller("external-secrets.io/v1beta1", "ExternalSecret", "db")},
			want:   Ref{GroupKind: ExternalSecret, Namespace: "shop", Name: "db"}, ok: true,
		},
		"a Secret cert-manager annotated": {
			annotations: map[string]string{CertificateNameAnnotation: "web"},
			want:        Ref{GroupKind: Certificate, Namespace: "shop", Name: "web"}, ok: true,
		},
		"a Secret a Certificate controls (--enable-certificate-owner-ref)": {
			owners: []metav1.OwnerReference{controller("cert-manager.io/v1", "Certificate", "web")},
			want:   Ref{GroupKind: Certificate, Namespace: "shop", Name: "web"}, ok: true,
		},
		"an owner that is not the controller is no producer": {
			owners: []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "db", UID: "u"}},
		},
		"a controller of another kind is no producer": {
			owners: []metav1.OwnerReference{controller("apps/v1", "Deployment", "web")},
		},
		"a controller of another group with the same kind is no producer": {
			owners: []metav1.OwnerReference{controller("example.com/v1", "ExternalSecret", "db")},
		},
		"a Secret with neither has no producer": {
			annotations: map[string]string{"team": "shop"},
		},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			s := &metav1.ObjectMeta{Namespace: "shop", Name: "tls", OwnerReferences: tc.owners, Annotations: tc.annotations}
			ref, ok := RefOf(s)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(ref).To(Equal(tc.want))
			kept := &metav1.ObjectMeta{Namespace: "shop", Name: "tls", OwnerReferences: Owners(tc.owners), Annotations: tc.annotations}
			ref, ok = RefOf(kept)
			g.Expect(ok).To(Equal(tc.ok), "the same from the owners the cache keeps")
			g.Expect(ref).To(Equal(tc.want))
		})
	}
}

func TestOwners(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Owners([]metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "a"},
		{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "db", UID: "b", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
	})).To(Equal([]metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "db", Controller: ptr.To(true)}}),
		"the controller alone, without its UID")
	g.Expect(Owners([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "c", Controller: ptr.To(true)}})).To(BeNil())
	g.Expect(Owners(nil)).To(BeNil())
}
