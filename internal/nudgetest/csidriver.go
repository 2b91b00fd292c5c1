package nudgetest

import (
	_ "embed"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// podStatusCRD is the Secrets Store CSI driver's SecretProviderClassPodStatus
// CRD, written from the driver's published API; see its header.
//
//go:embed testdata/secrets-store-csi/secretproviderclasspodstatus-crd.yaml
var podStatusCRD []byte

// PodStatusCRD returns the Secrets Store CSI driver's
// SecretProviderClassPodStatus CustomResourceDefinition (the fields nudge
// reads), for tests of --enable-csi-integration. No driver runs in the tests:
// they write the pod statuses as the driver does (PodStatus).
func PodStatusCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(podStatusCRD, crd); err != nil {
		t.Fatalf("decoding the SecretProviderClassPodStatus CRD: %v", err)
	}
	return crd
}

// CSIVolume mounts the SecretProviderClass class with the Secrets Store CSI
// driver, as its usage guide writes it
// (https://secrets-store-csi-driver.sigs.k8s.io/getting-started/usage).
func CSIVolume(class string) PodOption {
	return func(t *corev1.PodTemplateSpec) {
		v := corev1.Volume{Name: "csi-" + class, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: "secrets-store.csi.k8s.io", ReadOnly: ptr.To(true),
			VolumeAttributes: map[string]string{"secretProviderClass": class},
		}}}
		t.Spec.Volumes = append(t.Spec.Volumes, v)
		c := &t.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + class, ReadOnly: true})
	}
}

// PodStatus returns the SecretProviderClassPodStatus the driver writes when
// it mounts class into pod (named "<pod>-<namespace>-<class>", labelled with
// the node, status at the top level), with objects as id, version pairs.
func PodStatus(namespace, pod, class string, objects ...[2]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("secrets-store.csi.x-k8s.io/v1")
	u.SetKind("SecretProviderClassPodStatus")
	u.SetNamespace(namespace)
	u.SetName(pod + "-" + namespace + "-" + class)
	u.SetLabels(map[string]string{"internal.secrets-store.csi.k8s.io/node-name": "node-1"})
	SetPodStatusObjects(u, objects...)
	_ = unstructured.SetNestedField(u.Object, pod, "status", "podName")
	_ = unstructured.SetNestedField(u.Object, class, "status", "secretProviderClassName")
	_ = unstructured.SetNestedField(u.Object, true, "status", "mounted")
	_ = unstructured.SetNestedField(u.Object, "/var/lib/kubelet/pods/"+pod+"/volumes/kubernetes.io~csi/csi-"+class+"/mount", "status", "targetPath")
	return u
}

// SetPodStatusObjects sets status.objects of a SecretProviderClassPodStatus,
// as the driver's rotation does: id, version pairs.
func SetPodStatusObjects(u *unstructured.Unstructured, objects ...[2]string) {
	list := make([]any, len(objects))
	for i, o := range objects {
		list[i] = map[string]any{"id": o[0], "version": o[1]}
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "status", "objects")
}
