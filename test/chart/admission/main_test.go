// Package admission tests the chart's ValidatingAdmissionPolicy for
// ValueBindings on a real kube-apiserver (with RBAC): the ValueBinding CRD
// from the chart's crds/, the policy and its binding as the chart renders
// them with valueBindings enabled for a release that acts in one namespace
// (scopeNamespace), and users impersonated by the admin, each with the RBAC
// a case gives them. A binding is admitted only when its author may get each
// Secret and ConfigMap it reads and patch its target, in every namespace:
// the cases run in namespaces of their own, where the release does not act.
package admission

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/test/chart/charttest"
)

var (
	plane  *testbed.Plane
	scheme = runtime.NewScheme()
	// admin is the plane's admin (system:masters), which every policy check
	// allows.
	admin client.Client
)

// scopeNamespace is the one namespace the release acts in
// (reloader.namespaces).
const scopeNamespace = "vap-scope"

// chartValues turns value bindings on for Harbor and HarborCluster, as
// docs/value-bindings.md does, for a release that acts in scopeNamespace.
var chartValues = charttest.Values{
	"valueBindings": map[string]any{
		"enabled": true,
		"targets": []map[string]any{
			{"apiGroup": "goharbor.io", "kind": "Harbor", "resource": "harbors"},
			{"apiGroup": "goharbor.io", "kind": "HarborCluster", "resource": "harborclusters"},
		},
	},
	"reloader": map[string]any{"namespaces": scopeNamespace},
}

// harborCRD is the tests' Harbor CRD (goharbor.io/v1beta1), written from
// harbor-operator's published API (see the file), relative to the root.
const harborCRD = "internal/binding/testdata/harbor-crd.yaml"

const (
	release          = "nudge"
	releaseNamespace = "nudge-system"
)

func TestMain(m *testing.M) {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane) {
		plane = p
		c, err := client.New(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		admin = c
	}))
}

// installed is true once install has set up the CRDs, the policy and its
// binding. Tests that need them call install first.
var installed bool

// install creates the ValueBinding CRD, the test's Harbor CRD, the
// release's namespace scopeNamespace, and the chart's admission policy and
// binding, once for the package, and waits until the API server enforces
// the policy.
func install(t *testing.T) {
	t.Helper()
	if installed {
		return
	}
	ctx := t.Context()
	root := charttest.Root(t)
	for _, file := range []string{
		filepath.Join(root, "charts", "nudge", "crds", "nudge.dev_valuebindings.yaml"),
		filepath.Join(root, harborCRD),
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("decoding %s: %v", file, err)
		}
		nudgetest.InstallCRD(t, admin, crd)
	}

	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scopeNamespace}}); err != nil {
		t.Fatal(err)
	}
	m := charttest.Render(t, release, releaseNamespace, chartValues)
	policies, bindings := m.OfKind("ValidatingAdmissionPolicy"), m.OfKind("ValidatingAdmissionPolicyBinding")
	if len(policies) != 1 || len(bindings) != 1 {
		t.Fatalf("the chart rendered %d policies and %d bindings, want 1 and 1", len(policies), len(bindings))
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	charttest.Into(t, policies[0], policy)
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	charttest.Into(t, bindings[0], binding)
	for _, o := range []client.Object{policy, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	installed = true
	waitEnforced(t)
}

// waitEnforced waits until the API server enforces the policy: it refuses a
// binding from a user who may create ValueBindings and nothing else. (The
// policy takes effect a moment after it is created.)
func waitEnforced(t *testing.T) {
	t.Helper()
	ns := namespace(t, "probe-")
	grant(t, ns, "probe", authorRules...)
	probe := as(t, "probe")
	NewWithT(t).Eventually(func() error {
		b := valueBinding(ns, "probe", harborTarget("harbor"), secretValue("spec.x", "s3-credentials", "accesskey"))
		err := probe.Create(t.Context(), b)
		if err == nil {
			_ = admin.Delete(t.Context(), b)
		}
		return err
	}).WithTimeout(60*time.Second).Should(MatchError(ContainSubstring(policyName)), "the API server to enforce the policy")
}
