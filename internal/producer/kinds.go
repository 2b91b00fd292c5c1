package producer

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// CertificateNameAnnotation is the annotation cert-manager sets on the
// Secret a Certificate writes: the name of that Certificate, in the
// Secret's namespace
// (https://cert-manager.io/docs/reference/annotations/#cert-manageriocertificate-name).
const CertificateNameAnnotation = "cert-manager.io/certificate-name"

var (
	// ExternalSecret is the External Secrets Operator's ExternalSecret
	// (https://external-secrets.io/latest/api/externalsecret/). With its
	// default creationPolicy, Owner, it is the controller owner of the
	// Secret it writes: spec.target.name, or its own name when that is
	// empty.
	ExternalSecret = schema.GroupKind{Group: "external-secrets.io", Kind: "ExternalSecret"}
	// Certificate is cert-manager's Certificate
	// (https://cert-manager.io/docs/reference/api-docs/#cert-manager.io/v1.Certificate),
	// named by the CertificateNameAnnotation of the Secret it writes,
	// spec.secretName (and its controller owner when cert-manager runs with
	// --enable-certificate-owner-ref).
	Certificate = schema.GroupKind{Group: "cert-manager.io", Kind: "Certificate"}
)

// kind is what nudge reads of one producer kind.
type kind struct {
	schema.GroupKind
	// versions are the API versions nudge reads it in, preferred first:
	// their status has the same fields.
	versions []string
	// target is the path in the object of the name of the Secret it writes;
	// when that is empty, the Secret bears the object's own name.
	target []string
}

// kinds are the producers nudge reads. The ExternalSecret CRD of
// external-secrets v0.16 serves v1 (its storage version) and v1beta1,
// whose status types are the same
// (apis/externalsecrets/v1/externalsecret_types.go, ExternalSecretStatus).
var kinds = []kind{
	{GroupKind: ExternalSecret, versions: []string{"v1", "v1beta1"}, target: []string{"spec", "target", "name"}},
	{GroupKind: Certificate, versions: []string{"v1"}, target: []string{"spec", "secretName"}},
}

// kindOf returns the producer kind gk, ok false when gk is none.
func kindOf(gk schema.GroupKind) (kind, bool) {
	for _, k := range kinds {
		if k.GroupKind == gk {
			return k, true
		}
	}
	return kind{}, false
}

// Ref names the producer of a Secret: an object of a producer kind in the
// Secret's namespace.
type Ref struct {
	schema.GroupKind
	Namespace, Name string
}

// String returns "Kind namespace/name", as Events and nudge explain show a
// producer.
func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// RefOf returns the producer secret names: its controller owner reference
// when that is of a producer kind (in whichever API version; its UID is not
// compared, as the External Secrets Operator does not either when it takes
// a Secret over), else the Certificate of its CertificateNameAnnotation.
// ok is false when it names none.
func RefOf(secret metav1.Object) (ref Ref, ok bool) {
	if owner := metav1.GetControllerOfNoCopy(secret); owner != nil {
		gk := schema.FromAPIVersionAndKind(owner.APIVersion, owner.Kind).GroupKind()
		if _, ok := kindOf(gk); ok {
			return Ref{GroupKind: gk, Namespace: secret.GetNamespace(), Name: owner.Name}, true
		}
	}
	if name := secret.GetAnnotations()[CertificateNameAnnotation]; name != "" {
		return Ref{GroupKind: Certificate, Namespace: secret.GetNamespace(), Name: name}, true
	}
	return Ref{}, false
}

// Owners returns of a Secret's owner references the one RefOf reads, its
// controller when that is of a producer kind, with only its API version,
// kind, name and controller mark (the version and kind each a copy shared
// by every Secret: unique.Make); nil when there is none. It is for the
// Secrets' cache transform, which otherwise keeps no owner reference: a
// Secret's producer is read from the cached Secret.
func Owners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, o := range refs {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		gk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupKind()
		if _, ok := kindOf(gk); !ok {
			return nil
		}
		return []metav1.OwnerReference{{APIVersion: unique.Make(o.APIVersion).Value(), Kind: unique.Make(o.Kind).Value(),
			Name: o.Name, Controller: ptr.To(true)}}
	}
	return nil
}
