package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/explain"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/settings"
	"nudge.dev/nudge/internal/workload"
)

// TestStatus: kubectl nudge status, on a namespace where a wave halted
// (the canary's rollout missed its progress deadline, so web is held for
// the same content), a Deployment waits for a Secret that does not exist,
// and a ValueBinding is not Ready, shows each, and the install's leader,
// with no flag but the namespace.
func TestStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := suite.Plane.GenerateNamespace(ctx, "status-")
	g.Expect(err).NotTo(HaveOccurred())
	system, err := suite.Plane.GenerateNamespace(ctx, "status-system-")
	g.Expect(err).NotTo(HaveOccurred())
	nt.InstallCRD(t, suite.K8s, valueBindingCRD(t))

	auto := map[string]string{"nudge.dev/auto": "true"}
	canary := nt.Deployment(ns, "canary", 1, map[string]string{"nudge.dev/auto": "true", fleet.PriorityAnnotation: "10"}, nt.EnvFrom("ConfigMap", "app"))
	objs := []client.Object{
		nt.ConfigMap(ns, "app", map[string]string{"a": "1"}),
		canary,
		nt.Deployment(ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(ns, "needy", 1, auto, nt.EnvFrom("Secret", "absent")),
		valueBinding(ns, "harbor-key", "absent-creds"),
	}
	for _, o := range objs {
		g.Expect(suite.K8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	nt.Start(t, suite.Plane.Config(), ns, func(o *options.Options) {
		o.SystemNamespace = system
		o.RolloutWindow = 0
		o.MaxConcurrentRollouts = 1
		o.LeaderElect = true
		o.LeaderElectionID = "nudge-status"
		o.ValueBindings = true
		o.ValueBindingTargets = []string{"ConfigMap"}
	})
	for _, name := range []string{"canary", "web"} {
		g.Eventually(func() string {
			d := &appsv1.Deployment{}
			g.Expect(suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
			return d.Annotations[workload.AppliedAnnotation]
		}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", name)
	}

	// The canary takes the one slot; its rollout misses its deadline, and
	// web, waiting on the same content, is halted.
	updateData(t, ns, "app")
	nt.HaltWave(t, suite.K8s, canary, "web")
	g.Eventually(func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(valueBindingGVK)
		g.Expect(suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "harbor-key"}, u)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Ready" {
				reason, _ := c["reason"].(string)
				return reason
			}
		}
		return ""
	}).WithTimeout(30*time.Second).Should(Equal("TargetNotFound"), "the binding's Ready reason")

	out, err := run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), "status:\n%s", out)
	t.Logf("kubectl nudge status -n NS:\n%s", out)
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta(system+"/nudge-settings")+` +\S+ +\S+`), "the install and its leader:\n%s", out)
	g.Expect(out).To(ContainSubstring("Rollouts failed (1):"))
	g.Expect(out).To(MatchRegexp(`Deployment ` + ns + `/canary +\S+ +ProgressDeadlineExceeded`))
	g.Expect(out).To(ContainSubstring("Halted (1):"))
	g.Expect(out).To(MatchRegexp(`Deployment ` + ns + `/web +ConfigMap ` + ns + `/app +[0-9a-f]{8}\.\S+ +Deployment ` + ns + `/canary`))
	g.Expect(out).To(ContainSubstring("Waiting for a missing required source (1):"))
	g.Expect(out).To(MatchRegexp(`Deployment ` + ns + `/needy +Secret ` + ns + `/absent`))
	g.Expect(out).To(ContainSubstring("ValueBindings not Ready (1):"))
	g.Expect(out).To(MatchRegexp(ns + `/harbor-key +TargetNotFound`))

	out, err = run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), "status -o json:\n%s", out)
	var got struct{ Fleet explain.Fleet }
	g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), "JSON:\n%s", out)
	g.Expect(got.Fleet.Halted).To(ConsistOf(HaveField("Workload", "Deployment "+ns+"/web")))
	g.Expect(got.Fleet.Bindings).To(ConsistOf(HaveField("Reason", "TargetNotFound")))
	g.Expect(got.Fleet.Installs).To(ContainElement(And(HaveField("ConfigMap", system+"/nudge-settings"), HaveField("LeaderState", "Held"))))
}

// valueBindingGVK is the kind of nudge's ValueBinding.
var valueBindingGVK = v1alpha1.GroupVersion.WithKind("ValueBinding")

// valueBinding binds key "password" of Secret secret into ConfigMap
// "target" of ns.
func valueBinding(ns, name, secret string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"target": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "target"},
			"values": []any{map[string]any{"fieldPath": "data.password",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": "password"}}}},
		},
	}}
	u.SetGroupVersionKind(valueBindingGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// valueBindingCRD returns the ValueBinding CRD as the chart ships it.
func valueBindingCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "nudge", "crds", "nudge.dev_valuebindings.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	NewWithT(t).Expect(yaml.Unmarshal(b, crd)).To(Succeed())
	return crd
}

// TestStatusShardedLeaders: an install sharded by --shard has a Lease per
// shard and none of the plain name; status shows each shard of the set
// held now (one of whose leaders is gone: NoLeader), not the expired
// Leases of the set before a reshard.
func TestStatusShardedLeaders(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	system, err := suite.Plane.GenerateNamespace(ctx, "status-shards-")
	g.Expect(err).NotTo(HaveOccurred())
	opts := options.Default()
	opts.SystemNamespace = system
	opts.LeaderElect = true
	opts.LeaderElectionID = "nudge-sharded"
	g.Expect(suite.K8s.Create(ctx, settings.ConfigMap(system, "nudge-settings", "v1", opts))).To(Succeed())

	now := time.Now()
	for name, renewed := range map[string]time.Time{
		"0-of-2": now.Add(-time.Hour), "1-of-2": now.Add(-time.Hour), // before the reshard
		"0-of-3": now, "1-of-3": now, "2-of-3": now.Add(-time.Hour),
	} {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "nudge-sharded-shard-" + name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-" + name), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: renewed}},
		}
		g.Expect(suite.K8s.Create(ctx, l)).To(Succeed(), "creating Lease %s", l.Name)
	}

	out, err := run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "--system-namespace", system, "-n", system, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), "status -o json:\n%s", out)
	var got struct{ Fleet explain.Fleet }
	g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), "JSON:\n%s", out)
	cm := system + "/nudge-settings"
	g.Expect(got.Fleet.Installs).To(ConsistOf(
		explain.InstallStatus{ConfigMap: cm, Version: "v1", Shard: "0-of-3", Leader: "pod-0-of-3", LeaderState: "Held"},
		explain.InstallStatus{ConfigMap: cm, Version: "v1", Shard: "1-of-3", Leader: "pod-1-of-3", LeaderState: "Held"},
		explain.InstallStatus{ConfigMap: cm, Version: "v1", Shard: "2-of-3", LeaderState: "NoLeader"},
	))

	out, err = run(t, pluginCommand(), "status", "--kubeconfig", suite.Plane.Kubeconfig(), "--system-namespace", system, "-n", system)
	g.Expect(err).NotTo(HaveOccurred(), "status:\n%s", out)
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta(cm) + ` +v1 +2-of-3 +NoLeader`))
}
