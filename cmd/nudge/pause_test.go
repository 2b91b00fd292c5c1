package main

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/explain"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// TestExplainPaused: explain shows what pauses a workload (itself, or a
// source it reads) and the change that waits, state Paused; status lists
// the paused workloads with what waits, and none that waits for nothing.
func TestExplainPaused(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := suite.Plane.GenerateNamespace(ctx, "explain-paused-")
	g.Expect(err).NotTo(HaveOccurred())
	system, err := suite.Plane.GenerateNamespace(ctx, "explain-paused-system-")
	g.Expect(err).NotTo(HaveOccurred())

	cfg := nt.ConfigMap(ns, "cfg", map[string]string{"a": "1"})
	cfg.Annotations = map[string]string{dialect.NudgePaused: "true"}
	objs := []client.Object{
		nt.ConfigMap(ns, "app", map[string]string{"a": "1"}), cfg,
		nt.Deployment(ns, "held", 1, map[string]string{"nudge.dev/auto": "true", dialect.NudgePaused: "true"}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(ns, "bysource", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "cfg")),
	}
	for _, o := range objs {
		g.Expect(suite.K8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	n := nt.Start(t, suite.Plane.Config(), ns, func(o *options.Options) { o.SystemNamespace = system })
	for _, o := range objs[2:] {
		g.Eventually(func() string {
			g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			return o.GetAnnotations()[workload.AppliedAnnotation]
		}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", o.GetName())
	}
	n.Stop(t)
	updateData(t, ns, "app")
	updateData(t, ns, "cfg")

	explainOf := func(name string) string {
		out, err := run(t, pluginCommand(), "explain", "deployment/"+name, "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "--system-namespace", system)
		g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
		return out
	}
	out := explainOf("held")
	g.Expect(out).To(MatchRegexp(`Status: +Paused: changed, but paused by nudge.dev/paused on the workload: .*ConfigMap `+ns+`/app`), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Paused by: +nudge.dev/paused on Deployment `+ns+`/held\n`), "explain:\n%s", out)
	out = explainOf("bysource")
	g.Expect(out).To(MatchRegexp(`Status: +Paused: changed, but paused by nudge.dev/paused on the changed source\(s\) ConfigMap `+ns+`/cfg`), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Paused by: +nudge.dev/paused on ConfigMap `+ns+`/cfg\n`), "explain:\n%s", out)

	out, err = run(t, pluginCommand(), "explain", "configmap/cfg", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "--system-namespace", system)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(ContainSubstring("held while paused (nudge.dev/paused on the changed source(s) ConfigMap "+ns+"/cfg)"), "explain of the source:\n%s", out)

	out, err = run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "-o", "json", "--system-namespace", system)
	g.Expect(err).NotTo(HaveOccurred(), "status -o json:\n%s", out)
	var got struct{ Fleet explain.Fleet }
	g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), "JSON:\n%s", out)
	g.Expect(got.Fleet.Paused).To(ConsistOf(
		explain.Paused{Workload: "Deployment " + ns + "/held", By: []string{"Deployment " + ns + "/held"}, Waiting: []string{"ConfigMap " + ns + "/app"}, Compared: true},
		explain.Paused{Workload: "Deployment " + ns + "/bysource", By: []string{"ConfigMap " + ns + "/cfg"}, Waiting: []string{"ConfigMap " + ns + "/cfg"}, Compared: true},
	))
	out, err = run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "--system-namespace", system)
	g.Expect(err).NotTo(HaveOccurred(), "status:\n%s", out)
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta("Paused (nudge.dev/paused) (2):")), "status:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Deployment `+ns+`/held +Deployment `+ns+`/held +ConfigMap `+ns+`/app`), "status:\n%s", out)
}
