package fleet_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// tenants is a test's namespace (the victim's: the ConfigMap app, read by
// the Deployments canary, of priority 10, web and api) and a second one, the
// tenant's, whose workloads the tenant edits; nudge is not started.
func tenants(t *testing.T) (victim, tenant *env) {
	t.Helper()
	victim = setup(t, false, nil)
	ns, err := suite.Plane.GenerateNamespace(victim.Ctx, "it-tenant-")
	victim.G.Expect(err).NotTo(HaveOccurred())
	tenant = &env{&nt.Env{T: t, G: victim.G, Ctx: victim.Ctx, NS: ns, K8s: suite.K8s, Templates: nt.WatchTemplates(t, suite.K8s, ns)}}
	victim.Create(nt.ConfigMap(victim.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(victim.NS, "canary", 1, map[string]string{"nudge.dev/auto": "true", fleet.PriorityAnnotation: "10"}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(victim.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(victim.NS, "api", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	return victim, tenant
}

// startOver starts a nudge watching both namespaces, with
// --max-concurrent-rollouts 1, and waits for the victim's baselines.
func startOver(t *testing.T, victim, tenant *env) {
	t.Helper()
	victim.Nudge = nt.Start(t, suite.Plane.Config(), victim.NS, func(o *options.Options) {
		o.MaxConcurrentRollouts, o.RolloutWindow = 1, 0
		o.Namespaces = []string{victim.NS, tenant.NS}
	})
	for _, n := range []string{"canary", "web", "api"} {
		victim.Baselined(n)
	}
}

// rollsEveryone changes app, then checks that every workload of the victim
// rolls once to it, in waves, and that none is held.
func (e *env) rollsEveryone() {
	e.T.Helper()
	e.change("2")
	everyone := []string{"canary", "web", "api"}
	e.G.Eventually(e.completeRolled(everyone...)).WithTimeout(40*time.Second).Should(
		Equal(map[string]int64{"canary": 1, "web": 1, "api": 1}), "every workload of the victim to roll once, one at a time")
	for _, n := range everyone {
		e.G.Expect(e.Deployment(n).Annotations).NotTo(HaveKey(fleet.HaltedAnnotation), "Deployment %s not held", n)
		e.G.Expect(e.Events(n, record.ReasonRolloutHalted)()).To(BeEmpty(), "no RolloutHalted Event on %s", n)
	}
}

// A tenant, who edits the workloads of its namespace and nothing else,
// forges there each fleet annotation of nudge's, to hold or stall the
// rollouts of the victim's ConfigMap: a failed rollout whose
// nudge.dev/rolled-for names the content app is about to get, unsealed (as
// earlier builds of nudge wrote it) or with a made-up mark; a
// nudge.dev/last-rollout on a workload that never completes, to take the
// one slot; a hold naming the victim's source. The forgeries are there
// before nudge starts, so that its waves are seeded with them. The change
// rolls every workload of the victim, none is held, and nudge neither rolls
// the tenant's workloads nor reports their rollouts as failed.
func TestForgedFleetStateHaltsNothing(t *testing.T) {
	victim, tenant := tenants(t)
	key, err := fingerprint.LoadKey(victim.Ctx, suite.K8s, victim.NS, options.Default().KeySecret) // the key nudge loads
	victim.G.Expect(err).NotTo(HaveOccurred())
	// What app's next content digests to: the tenant reads it from its own
	// workloads' applied state once app's content is reverted to it, or
	// from a ReplicaSet's annotations; here, straight from the key.
	app := refs.Source{Kind: refs.ConfigMap, Namespace: victim.NS, Name: "app"}
	next := sources.ContentDigest(key, app, nt.ConfigMap(victim.NS, "app", map[string]string{"a": "2"}))
	long := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	forged := map[string]map[string]string{
		"unsealed": {fleet.RolledForAnnotation: app.String() + "=" + next, workload.LastRolloutAnnotation: long},
		"made-up": {fleet.RolledForAnnotation: "seal=0123456789abcdef0123456789abcdef " + app.String() + "=" + next,
			workload.LastRolloutAnnotation: long},
		"hog":  {workload.LastRolloutAnnotation: time.Now().UTC().Format(time.RFC3339Nano)},
		"held": {fleet.HaltedAnnotation: app.String() + "=" + next + " Deployment/" + victim.NS + "/canary"},
	}
	tenant.Create(nt.ConfigMap(tenant.NS, "own", map[string]string{"a": "1"}))
	for name, a := range forged {
		a["nudge.dev/auto"] = "true"
		tenant.Create(nt.Deployment(tenant.NS, name, 1, a, nt.EnvFrom("ConfigMap", "own")))
	}
	tenant.exceedDeadline("unsealed")
	tenant.exceedDeadline("made-up")
	tenant.setStatus("hog", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1}
	})

	startOver(t, victim, tenant)
	victim.rollsEveryone()
	for name := range forged {
		tenant.G.Expect(tenant.Events(name, record.ReasonRolloutFailed)()).To(BeEmpty(), "no RolloutFailed Event on the tenant's %s", name)
	}
	tenant.G.Consistently(tenant.rolled("unsealed", "made-up", "hog", "held")).WithTimeout(3*time.Second).Should(
		BeEmpty(), "the tenant's workloads not rolled")
}

// A tenant's workload may read the victim's ConfigMap (nudge.dev/configmaps
// names it), and its rollout, by nudge, may fail: that failure halts the
// tenant's workloads waiting on the same content, not the victim's.
func TestFailureHaltsOnlyItsNamespace(t *testing.T) {
	victim, tenant := tenants(t)
	reads := func(priority string) map[string]string {
		return map[string]string{"nudge.dev/auto": "true", "nudge.dev/configmaps": victim.NS + "/app", fleet.PriorityAnnotation: priority}
	}
	tenant.Create(nt.ConfigMap(tenant.NS, "own", map[string]string{"a": "1"}),
		nt.Deployment(tenant.NS, "reader", 1, reads("100"), nt.EnvFrom("ConfigMap", "own")),
		nt.Deployment(tenant.NS, "follower", 1, reads("-5"), nt.EnvFrom("ConfigMap", "own")))
	startOver(t, victim, tenant)
	tenant.Baselined("reader")
	tenant.Baselined("follower")

	victim.change("2")
	tenant.G.Eventually(tenant.rolled("reader")).WithTimeout(20*time.Second).Should(ConsistOf("reader"), "the tenant's reader, first, to roll")
	tenant.exceedDeadline("reader")
	tenant.G.Eventually(func() string { return tenant.Deployment("follower").Annotations[fleet.HaltedAnnotation] }).WithTimeout(20*time.Second).Should(
		And(HavePrefix("ConfigMap/"+victim.NS+"/app="), HaveSuffix(" Deployment/"+tenant.NS+"/reader")),
		"the tenant's follower held for the content that failed")

	everyone := []string{"canary", "web", "api"}
	victim.G.Eventually(victim.completeRolled(everyone...)).WithTimeout(40*time.Second).Should(
		Equal(map[string]int64{"canary": 1, "web": 1, "api": 1}), "every workload of the victim to roll once, one at a time")
	for _, n := range everyone {
		victim.G.Expect(victim.Deployment(n).Annotations).NotTo(HaveKey(fleet.HaltedAnnotation), "Deployment %s not held", n)
	}
	tenant.G.Expect(tenant.Templates.Count("follower")).To(BeZero(), "the tenant's follower not rolled")
}
