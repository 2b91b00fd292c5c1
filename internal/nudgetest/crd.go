package nudgetest

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallCRD creates crd with c (an existing one is fine) and waits up to
// 30 s until it is established, then up to 30 s until c's REST mapper maps
// its kind: API discovery serves a new group a moment after the CRD is
// established, and a create in between fails with "no matches for kind".
// c's scheme must know apiextensions/v1.
func InstallCRD(t testing.TB, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	g := gomega.NewWithT(t)
	g.Expect(client.IgnoreAlreadyExists(c.Create(t.Context(), crd))).To(gomega.Succeed(), "creating CRD %s", crd.Name)
	g.Eventually(func() bool {
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(crd), crd)).To(gomega.Succeed())
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}).WithTimeout(30*time.Second).Should(gomega.BeTrue(), "CRD %s established", crd.Name)
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	g.Eventually(func() error {
		_, err := c.RESTMapper().RESTMapping(gk, crd.Spec.Versions[0].Name)
		return err
	}).WithTimeout(30*time.Second).Should(gomega.Succeed(), "the client to map %s", gk)
}
