// Package e2e installs nudge's chart on the full local plane and runs the
// nudge binary with the chart's ServiceAccount token as its only identity,
// in each RBAC mode: it must roll what is in its scope, neither read nor
// roll what is not, and never be refused a request.
//
// The chart's own Deployment runs too, as kwok fake pods (no image runs);
// they show that its pods pass the "restricted" Pod Security Standard.
package e2e

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

var (
	plane *testbed.Plane
	k8s   client.Client
	// nudgeBin is the nudge binary built from this tree.
	nudgeBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return nudgetest.MainWithBinary(m, testbed.Options{Mode: testbed.Cluster, Nodes: 1, AuditLog: true}, func(p *testbed.Plane, bin string) {
		plane, nudgeBin = p, bin
		c, err := nudgetest.Client(p.Config())
		if err != nil {
			panic(err)
		}
		k8s = c
	})
}

// The Magnum spec's install: watchGlobally=false in one namespace. nudge
// rolls there, and neither reads nor rolls the same workload next door. Argo
// Rollouts, installed after nudge started, is found by API discovery (no
// cluster-wide permission) and its Rollouts in the namespace handled too.
func TestNamespacedInstall(t *testing.T) {
	g := NewWithT(t)
	removeRolloutCRD(t) // whatever test ran before: installed after nudge starts
	ns, other := namespace(t, "chart-ns-"), namespace(t, "chart-other-")
	rel := install(t, "nudge", ns, charttest.Values{"reloader": map[string]any{"watchGlobally": false}})
	n := start(t, rel)
	g.Expect(n.logs()).To(ContainSubstring("Waiting for the API server to serve a kind"), "Argo Rollouts not installed yet")

	app(t, ns, "web")
	app(t, other, "web")
	baselined(t, ns, "web")
	installRolloutCRD(t)
	rollout, outside := argoRollout(ns, "canary"), argoRollout(other, "canary")
	g.Expect(k8s.Create(t.Context(), rollout)).To(Succeed())
	g.Expect(k8s.Create(t.Context(), outside)).To(Succeed())
	rolloutBaselined(t, rollout)

	changeConfigMap(t, ns, "web")
	changeConfigMap(t, other, "web")
	g.Eventually(replicaSets(t, ns, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in the release namespace")
	rolloutRolled(t, rollout)
	g.Consistently(replicaSets(t, other, "web")).WithTimeout(5*time.Second).Should(Equal(1), "no rollout outside it")
	var d appsv1.Deployment
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: other, Name: "web"}, &d)).To(Succeed())
	g.Expect(d.Annotations).NotTo(HaveKey(workload.AppliedAnnotation), "never seen outside it")
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(outside), outside)).To(Succeed())
	g.Expect(outside.GetAnnotations()).NotTo(HaveKey(workload.AppliedAnnotation), "no Rollout seen outside it")
	g.Expect(outside.GetGeneration()).To(Equal(int64(1)), "no Rollout rolled outside it")

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		if e.Resource != "" { // not discovery
			g.Expect(e.Namespace).To(Equal(ns), "only requests in %s, got %+v", ns, e)
		}
	}
}

// The default install: a ClusterRole. With two replicas (leader election,
// with a Lease named after the release) nudge rolls Deployments in any
// namespace, and Argo Rollouts once their CRD appears.
func TestGlobalInstall(t *testing.T) {
	g := NewWithT(t)
	removeRolloutCRD(t) // whatever test ran before: installed after nudge starts
	ns, a, b := namespace(t, "chart-global-"), namespace(t, "chart-a-"), namespace(t, "chart-b-")
	rel := install(t, "nudge-global", ns, charttest.Values{"replicas": 2})
	g.Expect(rel.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
	n := start(t, rel)
	g.Expect(n.args).To(ContainElements("--leader-elect", "--leader-election-id="+rel.deploy.Name))

	app(t, a, "web")
	app(t, b, "web")
	installRolloutCRD(t)
	rollout := argoRollout(a, "canary")
	g.Expect(k8s.Create(t.Context(), rollout)).To(Succeed())
	baselined(t, a, "web")
	baselined(t, b, "web")
	rolloutBaselined(t, rollout)

	changeConfigMap(t, a, "web")
	changeConfigMap(t, b, "web")
	g.Eventually(replicaSets(t, a, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", a)
	g.Eventually(replicaSets(t, b, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", b)
	rolloutRolled(t, rollout)
	var leases coordinationv1.LeaseList
	g.Expect(k8s.List(t.Context(), &leases, client.InNamespace(ns))).To(Succeed())
	g.Expect(leases.Items).To(ConsistOf(HaveField("Name", "nudge-global")), "one Lease, named after the release")
	g.Expect(leases.Items[0].Spec.HolderIdentity).To(HaveValue(Not(BeEmpty())), "nudge elected itself")

	n.stop(t)
	n.expectNoForbidden(t)
	requestsOf(t, rel.user())
}

// watchGlobally with reloader.namespaces: the workload rules are bound in
// those namespaces alone; with ignoreSecrets, Secrets are not readable at
// all. nudge works within that, and leaves the rest unread.
func TestGlobalInstallLimitedToNamespaces(t *testing.T) {
	g := NewWithT(t)
	ns, a, b := namespace(t, "chart-some-"), namespace(t, "chart-a-"), namespace(t, "chart-b-")
	rel := install(t, "nudge-some", ns, charttest.Values{"reloader": map[string]any{"namespaces": a, "ignoreSecrets": true}})
	n := start(t, rel)

	app(t, a, "web")
	app(t, b, "web")
	baselined(t, a, "web")
	changeConfigMap(t, a, "web")
	changeConfigMap(t, b, "web")
	g.Eventually(replicaSets(t, a, "web")).WithTimeout(30*time.Second).Should(Equal(2), "a new ReplicaSet in %s", a)
	g.Consistently(replicaSets(t, b, "web")).WithTimeout(5*time.Second).Should(Equal(1), "no rollout in %s", b)

	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		g.Expect(e.Namespace).NotTo(Equal(b), "nothing read in %s, got %+v", b, e)
		if e.Resource == "secrets" {
			g.Expect(e).To(And(HaveField("Namespace", ns), HaveField("Name", "nudge-fingerprint-key")),
				"no Secret read but nudge's key")
		}
	}
}
