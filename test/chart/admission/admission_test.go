package admission

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// policyName is the name of the chart's policy and binding for release
// nudge in nudge-system; the API server names it in every refusal.
const policyName = "nudge-nudge-system-value-bindings"

var (
	// authorRules let a user write ValueBindings, and nothing else.
	authorRules = []rbacv1.PolicyRule{{
		APIGroups: []string{"nudge.dev"}, Resources: []string{"valuebindings"},
		Verbs: []string{"get", "create", "update", "patch"},
	}}
	// readsSources lets a user get the Secret and the ConfigMap the
	// cases' bindings read, by name.
	readsSources = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s3-credentials"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"s3-settings"}, Verbs: []string{"get"}},
	}
	// readsHarbor lets a user get the Harbor named harbor, not patch it.
	readsHarbor = []rbacv1.PolicyRule{
		{APIGroups: []string{"goharbor.io"}, Resources: []string{"harbors"}, ResourceNames: []string{"harbor"}, Verbs: []string{"get"}},
	}
	// patchesHarbor lets a user get and patch the Harbor named harbor.
	patchesHarbor = []rbacv1.PolicyRule{
		{APIGroups: []string{"goharbor.io"}, Resources: []string{"harbors"}, ResourceNames: []string{"harbor"}, Verbs: []string{"get", "patch"}},
	}
)

// harborBinding is the binding of docs/value-bindings.md: the S3 access key
// from a Secret, the region from a ConfigMap, into the Harbor named harbor.
func harborBinding(ns string) *unstructured.Unstructured {
	return valueBinding(ns, "harbor-s3", harborTarget("harbor"),
		secretValue("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"),
		configMapValue("spec.imageChartStorage.s3.region", "s3-settings", "region"))
}

func TestPolicyAdmitsOnlyWhatTheAuthorMayDo(t *testing.T) {
	install(t)
	tests := map[string]struct {
		rules   [][]rbacv1.PolicyRule
		binding func(ns string) *unstructured.Unstructured
		refused string // a part of the refusal's message; "" when admitted
		// inScope runs the case in the namespace the release acts in,
		// else in a namespace of its own.
		inScope bool
	}{
		"an author who may get the Secret and the ConfigMap and patch the Harbor is admitted": {
			rules:   [][]rbacv1.PolicyRule{readsSources, patchesHarbor},
			binding: harborBinding,
		},
		"an author who may patch the Harbor but not get the Secret is refused": {
			rules:   [][]rbacv1.PolicyRule{readsSources[1:], patchesHarbor},
			binding: harborBinding,
			refused: "may not get Secret %s/s3-credentials: a ValueBinding may read only what its author may get",
		},
		"an author who may get the sources and read the Harbor, but not patch it, is refused": {
			rules:   [][]rbacv1.PolicyRule{readsSources, readsHarbor},
			binding: harborBinding,
			refused: "may not patch Harbor.goharbor.io %s/harbor: a ValueBinding may write only what its author may patch",
		},
		"an author who may not get the ConfigMap is refused": {
			rules:   [][]rbacv1.PolicyRule{readsSources[:1], patchesHarbor},
			binding: harborBinding,
			refused: "may not get ConfigMap %s/s3-settings",
		},
		"a get of another Secret by name does not count": {
			rules: [][]rbacv1.PolicyRule{readsSources, patchesHarbor},
			binding: func(ns string) *unstructured.Unstructured {
				return valueBinding(ns, "harbor-s3", harborTarget("harbor"),
					secretValue("spec.imageChartStorage.s3.accesskey", "admin-credentials", "accesskey"))
			},
			refused: "may not get Secret %s/admin-credentials",
		},
		"a patch of another Harbor by name does not count": {
			rules: [][]rbacv1.PolicyRule{readsSources, patchesHarbor},
			binding: func(ns string) *unstructured.Unstructured {
				return valueBinding(ns, "harbor-s3", harborTarget("production"),
					secretValue("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
			},
			refused: "may not patch Harbor.goharbor.io %s/production",
		},
		"a kind not in valueBindings.targets is refused where the release acts, whatever the author may do": {
			rules:   [][]rbacv1.PolicyRule{readsSources, {{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}}}},
			binding: deploymentBinding,
			refused: "nudge may not patch Deployment.apps: the kinds a ValueBinding may target are those listed in the chart value valueBindings.targets (Harbor.goharbor.io,HarborCluster.goharbor.io)",
			inScope: true,
		},
		"a kind not in valueBindings.targets is left, where the release does not act, to the release that acts there": {
			rules:   [][]rbacv1.PolicyRule{readsSources, {{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}}}},
			binding: deploymentBinding,
		},
		"where the release does not act, an author who may not get the Secret is refused all the same": {
			rules:   [][]rbacv1.PolicyRule{readsSources[1:], {{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}}}},
			binding: deploymentBinding,
			refused: "may not get Secret %s/s3-credentials",
		},
		"the same Secret read into many fields is checked once: 64 values are admitted": {
			rules: [][]rbacv1.PolicyRule{readsSources, patchesHarbor},
			binding: func(ns string) *unstructured.Unstructured {
				values := make([]map[string]any, 64)
				for i := range values {
					values[i] = secretValue(fmt.Sprintf("metadata.annotations['k%d']", i), "s3-credentials", "accesskey")
				}
				return valueBinding(ns, "many", harborTarget("harbor"), values...)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespace(t, "vap-")
			if tc.inScope {
				ns = scopeNamespace
			}
			user := "author@" + ns
			grant(t, ns, user, authorRules...)
			for _, rules := range tc.rules {
				grant(t, ns, user, rules...)
			}
			author, binding := as(t, user), tc.binding(ns)
			create := func() error { return author.Create(t.Context(), binding) }
			if tc.refused == "" {
				eventually(t, create).Should(Succeed(), "admitted")
				return
			}
			eventually(t, create).Should(MatchError(ContainSubstring(policyName)), "refused by the chart's policy")
			err := create()
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "refused as Forbidden: %v", err)
			g.Expect(err).To(MatchError(ContainSubstring(strings.ReplaceAll(tc.refused, "%s", ns))))
		})
	}
}

// deploymentBinding binds a Secret's key into the Deployment named web, a
// kind not in the chart's valueBindings.targets.
func deploymentBinding(ns string) *unstructured.Unstructured {
	return valueBinding(ns, "web", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		secretValue("spec.template.metadata.annotations['x']", "s3-credentials", "accesskey"))
}

// The author's RBAC decides, as the API server would decide the same
// requests made directly: the refused author is refused the Secret itself,
// the admitted one gets it.
func TestPolicyAgreesWithTheAuthorsOwnRequests(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ns := namespace(t, "vap-direct-")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-credentials"},
		StringData: map[string]string{"accesskey": "AKIAEXAMPLE"}}
	g.Expect(admin.Create(t.Context(), secret)).To(Succeed())
	harbor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
		"metadata": map[string]any{"namespace": ns, "name": "harbor"},
		"spec": map[string]any{"externalURL": "https://registry.example", "harborAdminPasswordRef": "admin",
			"imageChartStorage": map[string]any{"s3": map[string]any{"bucket": "registry", "secretkeyRef": "s3-credentials"}}},
	}}
	g.Expect(admin.Create(t.Context(), harbor)).To(Succeed(), "a Harbor with the test's CRD")

	grant(t, ns, "bob", authorRules...)
	grant(t, ns, "bob", patchesHarbor...)
	bob := as(t, "bob")
	binding := valueBinding(ns, "harbor-s3", harborTarget("harbor"),
		secretValue("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	g.Expect(bob.Get(t.Context(), client.ObjectKeyFromObject(secret), &corev1.Secret{})).To(Satisfy(apierrors.IsForbidden), "bob may not get the Secret himself")
	eventually(t, func() error {
		return bob.Patch(t.Context(), harbor.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"by":"bob"}}}`)))
	}).Should(Succeed(), "bob may patch the Harbor himself")
	eventually(t, func() error { return bob.Create(t.Context(), binding.DeepCopy()) }).
		Should(MatchError(ContainSubstring("bob may not get Secret "+ns+"/s3-credentials")), "nor through nudge")

	grant(t, ns, "bob", readsSources...)
	g.Eventually(func() error {
		return bob.Get(t.Context(), client.ObjectKeyFromObject(secret), &corev1.Secret{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "bob gets the Secret once RBAC lets him")
	g.Expect(bob.Create(t.Context(), binding)).To(Succeed(), "and may then bind it")
}

// The policy checks whoever writes the spec; an update that leaves the spec
// alone (a label, a finalizer, what nudge itself writes) is not checked, and
// an update that changes it is, for the user who makes it.
func TestPolicyChecksWhoeverChangesTheSpec(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ns := namespace(t, "vap-update-")
	grant(t, ns, "carol", append(append(authorRules, readsSources...), patchesHarbor...)...)
	grant(t, ns, "dave", append(authorRules, patchesHarbor...)...) // may write ValueBindings and patch the Harbor, read no source
	b := harborBinding(ns)
	carol := as(t, "carol")
	eventually(t, func() error { return carol.Create(t.Context(), b) }).Should(Succeed())

	dave := as(t, "dave")
	labelled := b.DeepCopy()
	labelled.SetLabels(map[string]string{"team": "registry"})
	labelled.SetFinalizers([]string{"example.com/hold"})
	eventually(t, func() error { return dave.Update(t.Context(), labelled) }).Should(Succeed(), "dave changes labels and finalizers, not the spec")

	retargeted := labelled.DeepCopy()
	g.Expect(unstructured.SetNestedField(retargeted.Object, "production", "spec", "target", "name")).To(Succeed())
	g.Expect(dave.Update(t.Context(), retargeted)).To(MatchError(ContainSubstring("dave may not patch Harbor.goharbor.io "+ns+"/production")),
		"dave changes the target")
	moved := labelled.DeepCopy()
	values, _, _ := unstructured.NestedSlice(labelled.Object, "spec", "values")
	values[0] = secretValue("spec.imageChartStorage.s3.accesskey", "admin-credentials", "accesskey")
	g.Expect(unstructured.SetNestedSlice(moved.Object, values, "spec", "values")).To(Succeed())
	g.Expect(dave.Update(t.Context(), moved)).To(MatchError(ContainSubstring("dave may not get Secret "+ns+"/admin-credentials")),
		"dave changes a source")

	labelled.SetFinalizers(nil)
	g.Expect(admin.Update(t.Context(), labelled)).To(Succeed(), "the admin removes the finalizer")
}

// Sixteen distinct sources fit the API server's CEL budget for one request
// (each authorization check costs 350,000 of 10,000,000); a seventeenth is
// refused with a message that says so, not with a budget error.
func TestPolicyLimitsDistinctSources(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ns := namespace(t, "vap-sources-")
	sources := func(n int) *unstructured.Unstructured {
		values := make([]map[string]any, n)
		for i := range values {
			values[i] = secretValue(fmt.Sprintf("metadata.annotations['k%d']", i), fmt.Sprintf("secret-%d", i), "key")
		}
		return valueBinding(ns, fmt.Sprintf("sources-%d", n), harborTarget("harbor"), values...)
	}
	g.Expect(admin.Create(t.Context(), sources(16))).To(Succeed(), "16 distinct Secrets, each checked")
	g.Expect(admin.Create(t.Context(), sources(17))).To(MatchError(ContainSubstring(
		"a ValueBinding reads at most 16 distinct Secrets and ConfigMaps; this one reads 17")))

	grant(t, ns, "erin", authorRules...)
	grant(t, ns, "erin", patchesHarbor...)
	grant(t, ns, "erin", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
		ResourceNames: []string{"secret-0", "secret-1", "secret-2", "secret-3", "secret-4", "secret-5", "secret-6", "secret-7",
			"secret-8", "secret-9", "secret-10", "secret-11", "secret-12", "secret-13", "secret-14"}, Verbs: []string{"get"}})
	last := sources(16)
	last.SetName("erin")
	erin := as(t, "erin")
	eventually(t, func() error { return erin.Create(t.Context(), last) }).
		Should(MatchError(ContainSubstring("erin may not get Secret "+ns+"/secret-15")), "the sixteenth source is checked too")
}
