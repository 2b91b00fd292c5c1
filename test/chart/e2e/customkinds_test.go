package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

// The chart's customKinds: with only the permissions the chart renders from
// the list (here a Role, watchGlobally=false), nudge reads the file the
// chart mounts, finds Knative's Service once its CRD (from Knative's Go
// module) is installed, and rolls a Service, never refused a request.
func TestCustomKindsInstall(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "chart-kinds-")
	k := nt.KnativeServiceKind
	rel := install(t, "nudge-kinds", ns, charttest.Values{
		"reloader":    map[string]any{"watchGlobally": false},
		"customKinds": []any{map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind, "resource": k.Resource, "templatePath": k.TemplatePath}},
	})
	n := start(t, rel)
	nt.InstallCRD(t, k8s, nt.KnativeServiceCRD(t))

	g.Expect(k8s.Create(t.Context(), nt.ConfigMap(ns, "web", map[string]string{"GREETING": "hello"}))).To(Succeed())
	svc := nt.KnativeService(ns, "web", auto, nt.EnvFrom("ConfigMap", "web"), restricted)
	g.Expect(k8s.Create(t.Context(), svc)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		return svc.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of the Knative Service")
	changeConfigMap(t, ns, "web")
	g.Eventually(func() int64 {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		return svc.GetGeneration()
	}).WithTimeout(30*time.Second).Should(Equal(int64(2)), "the Knative Service's template rolled")

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		if e.Resource != "" { // not discovery
			g.Expect(e.Namespace).To(Equal(ns), "only requests in %s, got %+v", ns, e)
		}
	}
}
