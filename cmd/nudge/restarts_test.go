package main

import (
	"encoding/json"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/explain"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// TestStatusRestarts: status lists the workloads whose pods nudge restarts
// through the Eviction API, naming the PodDisruptionBudget that refuses
// their evictions, and those halted, from their nudge.dev/restart alone.
func TestStatusRestarts(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := suite.Plane.GenerateNamespace(ctx, "status-restarts-")
	g.Expect(err).NotTo(HaveOccurred())
	progress := func(v string) map[string]string { return map[string]string{eviction.ProgressAnnotation: v} }
	objs := []client.Object{
		nt.StatefulSet(ns, "db", 3, progress("since=2026-11-29T07:00:00Z pods=3 evicted=2026-11-29T07:00:05Z blocked=db-budget")),
		nt.DaemonSet(ns, "agent", progress("since=2026-11-29T07:00:00Z halted=true")),
		nt.StatefulSet(ns, "queue", 1, progress("since=2026-11-29T07:00:00Z")),
	}
	for _, o := range objs {
		g.Expect(suite.K8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	out, err := run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), "status:\n%s", out)
	g.Expect(out).To(ContainSubstring("Pods restarted through the Eviction API (3):"))
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta("StatefulSet "+ns+"/db") + ` +2026-11-29T07:00:00Z +2026-11-29T07:00:05Z +blocked by PodDisruptionBudget db-budget`))
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta("DaemonSet "+ns+"/agent") + ` .*halted`))
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta("StatefulSet "+ns+"/queue") + ` +2026-11-29T07:00:00Z +- +evicting`))

	out, err = run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), "status -o json:\n%s", out)
	var got struct{ Fleet explain.Fleet }
	g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), "JSON:\n%s", out)
	g.Expect(got.Fleet.Restarts).To(ContainElement(HaveField("Blocked", "db-budget")))
}
