package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// TestExplainWorkloadRef: explain shows an Argo Rollout with a
// spec.workloadRef with the references of the Deployment it names, and
// that ConfigMap's explanation lists the Rollout; a workloadRef to a
// Deployment that does not exist is a usage error that names it.
func TestExplainWorkloadRef(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := suite.Plane.GenerateNamespace(ctx, "explain-ref-")
	g.Expect(err).NotTo(HaveOccurred())
	system, err := suite.Plane.GenerateNamespace(ctx, "explain-ref-system-")
	g.Expect(err).NotTo(HaveOccurred())
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	ro := nt.RolloutRef(ns, "web", map[string]string{"nudge.dev/auto": "true"}, "pods")
	for _, o := range []client.Object{
		nt.ConfigMap(ns, "app", map[string]string{"a": "1"}),
		nt.Deployment(ns, "pods", 0, nil, nt.EnvFrom("ConfigMap", "app")),
		ro,
		nt.RolloutRef(ns, "orphan", map[string]string{"nudge.dev/auto": "true"}, "nope"),
	} {
		g.Expect(suite.K8s.Create(ctx, o)).To(Succeed(), "creating %s", o.GetName())
	}
	n := nt.Start(t, suite.Plane.Config(), ns, func(o *options.Options) { o.SystemNamespace = system })
	g.Eventually(func() string {
		g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(ro), ro)).To(Succeed())
		return ro.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of the Rollout")
	n.Stop(t)
	var cm corev1.ConfigMap
	g.Expect(suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	cm.Data["a"] = "2"
	g.Expect(suite.K8s.Update(ctx, &cm)).To(Succeed())

	flags := []string{"--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "--system-namespace", system}
	out, err := run(t, pluginCommand(), append([]string{"explain", "rollout/web"}, flags...)...)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(ContainSubstring("Pod template: Deployment "+ns+"/pods's (spec.workloadRef)"), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`ConfigMap +app +\* +no +envFrom +Counted +Changed`), "the Deployment's reference, compared:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Status: +WouldRoll`), "explain:\n%s", out)

	out, err = run(t, pluginCommand(), append([]string{"explain", "configmap/app"}, flags...)...)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Rollout/web +yes +envFrom`), "the Rollout depends on the ConfigMap its Deployment reads:\n%s", out)

	out, err = run(t, pluginCommand(), append([]string{"explain", "rollout/orphan"}, flags...)...)
	g.Expect(err).To(BeAssignableToTypeOf(usageError{}), "explain:\n%s", out)
	g.Expect(err).To(MatchError(ContainSubstring("Deployment " + ns + "/nope")))
}
