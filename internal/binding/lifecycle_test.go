package binding_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// deletionPolicy Orphan leaves the value in the target; Delete removes the
// fields nudge alone owns, and leaves Argo CD's.
func TestDeletionPolicy(t *testing.T) {
	e := setup(t, true, nil)
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.argoApply(harbor(e.ns, "orphan"))
	e.argoApply(harbor(e.ns, "delete"))
	orphan := valueBinding(e.ns, "orphan", "orphan", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	del := valueBinding(e.ns, "delete", "delete", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	del.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	e.create(orphan, del)
	for _, name := range []string{"orphan", "delete"} {
		e.g.Eventually(e.field(name, accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK1"), "applied to %s", name)
	}
	e.g.Eventually(func() []string {
		var b v1alpha1.ValueBinding
		e.g.Expect(suite.K8s.Get(e.ctx, client.ObjectKeyFromObject(del), &b)).To(Succeed())
		return b.Finalizers
	}).WithTimeout(30*time.Second).Should(ContainElement("nudge.dev/value-binding"), "the Delete binding holds a finalizer")

	e.g.Expect(suite.K8s.Delete(e.ctx, orphan)).To(Succeed())
	e.g.Expect(suite.K8s.Delete(e.ctx, del)).To(Succeed())
	for _, b := range []*v1alpha1.ValueBinding{orphan, del} {
		e.g.Eventually(func() bool {
			return apierrors.IsNotFound(suite.K8s.Get(e.ctx, client.ObjectKeyFromObject(b), &v1alpha1.ValueBinding{}))
		}).WithTimeout(30*time.Second).Should(BeTrue(), "ValueBinding %s gone", b.Name)
	}
	e.g.Expect(e.field("delete", accessKey...)()).To(BeNil(), "Delete removed the field")
	e.g.Expect(e.field("delete", "spec", "imageChartStorage", "s3", "bucket")()).To(Equal("images"), "Argo CD's fields stay")
	e.g.Expect(e.managers("delete", accessKey...)).To(BeEmpty())
	e.g.Consistently(e.field("orphan", accessKey...)).WithTimeout(3*time.Second).Should(Equal("AK1"), "Orphan leaves the value")
}

// nudge restarted writes nothing when nothing changed, and a binding whose
// target already holds its values writes nothing at first sight either.
func TestRestartWritesNothing(t *testing.T) {
	e := setup(t, true, nil)
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.argoApply(harbor(e.ns, "harbor"))
	held := harbor(e.ns, "held")
	held.Object["spec"].(map[string]any)["imageChartStorage"].(map[string]any)["s3"].(map[string]any)["accesskey"] = "AK1"
	e.argoApply(held)
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	e.waitReason("harbor-s3", v1alpha1.ReasonApplied)
	e.g.Expect(e.field("harbor", accessKey...)()).To(Equal("AK1"))

	versions := func() []string {
		return []string{e.getHarbor("harbor").GetResourceVersion(), e.getHarbor("held").GetResourceVersion()}
	}
	before := versions()
	e.nudge.Stop(t)
	second := e.start(nil)
	e.create(valueBinding(e.ns, "held", "held", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	e.waitReason("held", v1alpha1.ReasonApplied)
	e.g.Eventually(func() bool {
		for line := range strings.Lines(second.Logs()) {
			if strings.Contains(line, `"Reconciled ValueBinding"`) && strings.Contains(line, `"`+e.ns+`/harbor-s3"`) {
				return true
			}
		}
		return false
	}).WithTimeout(30*time.Second).Should(BeTrue(), "the restarted nudge reconciled the applied binding")
	e.g.Consistently(versions).WithTimeout(3*time.Second).Should(Equal(before), "no write to either Harbor")
	e.g.Expect(second.Logs()).NotTo(ContainSubstring("Applied ValueBinding"))
	e.g.Expect(e.managers("held", accessKey...)).To(ConsistOf("argocd-controller"), "nudge did not write the Harbor that held the value")
}

// A binding whose target kind is not served yet (its CRD installed after
// nudge) says so, and is applied once the kind is served and the target
// exists.
func TestCRDInstalledAfterNudge(t *testing.T) {
	group := fmt.Sprintf("t%d.goharbor.io", rand.Uint32())
	e := setup(t, true, func(o *options.Options) { o.ValueBindingTargets = []string{"Harbor." + group} })
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	b := valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey"))
	b.Spec.Target.APIVersion = group + "/v1beta1"
	e.create(b)
	c := e.waitReason("harbor-s3", v1alpha1.ReasonTargetNotFound)
	e.g.Expect(c.Message).To(ContainSubstring("the API server does not serve " + group + "/v1beta1 Harbor"))

	crd := &apiextensionsv1.CustomResourceDefinition{}
	e.g.Expect(yaml.Unmarshal(harborCRD, crd)).To(Succeed())
	crd.Name, crd.Spec.Group = "harbors."+group, group
	t.Cleanup(func() { _ = suite.K8s.Delete(t.Context(), crd) })
	nt.InstallCRD(t, suite.K8s, crd)
	h := harbor(e.ns, "harbor")
	h.SetAPIVersion(group + "/v1beta1")
	e.argoApply(h)
	e.g.Eventually(func() any {
		got := h.DeepCopy()
		e.g.Expect(suite.K8s.Get(e.ctx, client.ObjectKeyFromObject(h), got)).To(Succeed())
		return got.Object["spec"].(map[string]any)["imageChartStorage"].(map[string]any)["s3"].(map[string]any)["accesskey"]
	}).WithTimeout(30*time.Second).Should(Equal("AK1"), "applied once the kind is served")
	e.waitReason("harbor-s3", v1alpha1.ReasonApplied)
}

// Two replicas with leader election: one writes.
func TestLeaderElectionOneWriter(t *testing.T) {
	e := setup(t, false, nil)
	leaderOnly := func(o *options.Options) { o.LeaderElect = true }
	replicas := []*nt.Nudge{e.start(leaderOnly), e.start(leaderOnly)}
	e.nudge = replicas[0]
	e.g.Eventually(func() string {
		var l coordinationv1.Lease
		if err := suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: options.Default().LeaderElectionID}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "a leader")

	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.argoApply(harbor(e.ns, "harbor"))
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30 * time.Second).Should(Equal("AK1"))
	e.updateSecret("s3-credentials", map[string]string{"accesskey": "AK2"})
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30 * time.Second).Should(Equal("AK2"))

	// The log line follows the apply's answer, which can come after the
	// test saw the value.
	applies := func() []int {
		var out []int
		for _, r := range replicas {
			out = append(out, strings.Count(r.Logs(), "Applied ValueBinding"))
		}
		return out
	}
	e.g.Eventually(applies).WithTimeout(30*time.Second).Should(ConsistOf(0, 2),
		"one replica wrote, the leader, each value once")
	e.g.Consistently(applies).WithTimeout(3*time.Second).Should(ConsistOf(0, 2), "nothing is applied again")
}

// nudge started with --value-bindings before the ValueBinding CRD exists
// (config/ applied without config/crd) waits for it instead of failing, and
// reconciles bindings once it is installed. It needs a plane of its own: the
// shared one has the CRD.
func TestValueBindingCRDInstalledAfterNudge(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	c, err := client.New(p.Config(), client.Options{Scheme: suite.K8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ns, err := p.GenerateNamespace(t.Context(), "vb-")
	g.Expect(err).NotTo(HaveOccurred())
	n := nt.Start(t, p.Config(), ns, func(o *options.Options) {
		o.ValueBindings = true
		o.ValueBindingTargets = []string{harborKind}
	})
	g.Eventually(func() bool {
		for line := range strings.Lines(n.Logs()) {
			if strings.Contains(line, "Waiting for the API server to serve a kind") && strings.Contains(line, "Kind=ValueBinding") {
				return true
			}
		}
		return false
	}).WithTimeout(30*time.Second).Should(BeTrue(), "nudge waits for the ValueBinding CRD")

	e := &env{t: t, g: g, ctx: t.Context(), ns: ns, nudge: n}
	for _, b := range [][]byte{valueBindingCRD(t), harborCRD} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(yaml.Unmarshal(b, crd)).To(Succeed())
		nt.InstallCRD(t, c, crd)
	}
	g.Expect(c.Create(e.ctx, nt.Secret(ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))).To(Succeed())
	g.Expect(c.Apply(e.ctx, client.ApplyConfigurationFromUnstructured(harbor(ns, "harbor")), client.FieldOwner("argocd-controller"))).To(Succeed())
	g.Expect(c.Create(e.ctx, valueBinding(ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))).To(Succeed())
	g.Eventually(func() any {
		h := harbor(ns, "harbor")
		g.Expect(c.Get(e.ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		return h.Object["spec"].(map[string]any)["imageChartStorage"].(map[string]any)["s3"].(map[string]any)["accesskey"]
	}).WithTimeout(60*time.Second).Should(Equal("AK1"), "the binding applied once its CRD is served")
}
