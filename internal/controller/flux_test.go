package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// helmReleaseCRD is a stand-in for Flux's HelmRelease CRD
// (helm.toolkit.fluxcd.io/v2, https://fluxcd.io/flux/components/helm/helmreleases/):
// the Go module that holds the real one (github.com/fluxcd/helm-controller)
// is not served by the module proxy, and nudge reads and writes only the
// object's metadata, so its spec is left unchecked.
func helmReleaseCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "helmreleases.helm.toolkit.fluxcd.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "helm.toolkit.fluxcd.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "HelmRelease", ListKind: "HelmReleaseList", Plural: "helmreleases", Singular: "helmrelease"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v2", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}}}},
		},
	}
}

// A kind whose trigger is its own metadata.annotations, with a trigger
// annotation: as Flux's HelmRelease is configured in docs/custom-kinds.md,
// a change of the ConfigMap its annotation names sets
// reconcile.fluxcd.io/requestedAt, once per change, and nothing of its spec.
func TestTriggerInMetadataAnnotations(t *testing.T) {
	const requestedAt = "reconcile.fluxcd.io/requestedAt"
	e := setup(t, false, nil)
	nt.InstallCRD(t, suite.K8s, helmReleaseCRD())
	kind := workload.CustomKind{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Resource: "helmreleases",
		TriggerPath: "metadata.annotations", TriggerAnnotation: requestedAt}
	hr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"interval": "10m"}}}
	hr.SetGroupVersionKind(kind.GroupVersionKind())
	hr.SetNamespace(e.NS)
	hr.SetName("podinfo")
	hr.SetAnnotations(map[string]string{"configmap.reloader.stakater.com/reload": "values"})
	e.Create(nt.ConfigMap(e.NS, "values", map[string]string{"replicaCount": "1"}), hr)
	file := nt.CustomKindsFile(t, kind)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0; o.CustomKindsFile = file })
	e.BaselinedObj(hr)
	requested := func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(hr), hr)).To(Succeed())
		return hr.GetAnnotations()[requestedAt]
	}
	e.G.Consistently(requested).WithTimeout(3*time.Second).Should(BeEmpty(), "no reconcile requested at first sight")

	e.changeData("ConfigMap/values")
	e.G.Eventually(requested).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a reconcile requested")
	first := requested()
	e.G.Consistently(requested).WithTimeout(3*time.Second).Should(Equal(first), "requested once")
	e.changeData("ConfigMap/values")
	e.G.Eventually(requested).WithTimeout(20*time.Second).ShouldNot(Equal(first), "a second change, a second request")
	e.G.Expect(hr.GetGeneration()).To(Equal(int64(1)), "nothing of the spec written")
}
