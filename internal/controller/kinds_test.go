package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// TestEveryKind: each workload kind rolls once for a data change and not for
// a label change. (A Deployment's generation also counts annotation writes,
// so Deployments are counted from a watch elsewhere; every other kind's
// generation counts its spec writes.)
func TestEveryKind(t *testing.T) {
	t.Parallel()
	tests := map[string]func(ns string) client.Object{
		"StatefulSet": func(ns string) client.Object {
			return nt.StatefulSet(ns, "w", 1, auto, nt.EnvFrom("ConfigMap", "app"))
		},
		"DaemonSet": func(ns string) client.Object { return nt.DaemonSet(ns, "w", auto, nt.EnvFrom("ConfigMap", "app")) },
		"CronJob":   func(ns string) client.Object { return cronJob(ns, "w", auto, nt.EnvFrom("ConfigMap", "app")) },
		"Rollout":   func(ns string) client.Object { return nt.Rollout(ns, "w", auto, nt.EnvFrom("ConfigMap", "app")) },
	}
	for name, build := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, false, nil)
			if name == "Rollout" {
				nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
			}
			e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
			obj := build(e.NS)
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), obj)
			e.BaselinedObj(obj)
			e.changeMeta("ConfigMap/app")
			e.G.Consistently(e.Generation(obj)).WithTimeout(3*time.Second).Should(Equal(int64(1)), "no rollout for a label change")
			e.changeData("ConfigMap/app")
			e.G.Eventually(e.Generation(obj)).WithTimeout(10*time.Second).Should(Equal(int64(2)), "one rollout for a data change")
			e.G.Consistently(e.Generation(obj)).WithTimeout(3*time.Second).Should(Equal(int64(2)), "exactly one")
		})
	}
}

// Losing the fingerprint key re-baselines every workload without a rollout.
func TestLostKeyNeverRolls(t *testing.T) {
	e := setup(t, true, nil)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	before := e.Deployment("web").Annotations["nudge.dev/applied-fingerprint"]
	e.Nudge.Stop(t)

	var key corev1.Secret
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: options.Default().KeySecret}, &key)).To(Succeed())
	e.G.Expect(suite.K8s.Delete(e.Ctx, &key)).To(Succeed())
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, nil)
	e.G.Eventually(func() string { return e.Deployment("web").Annotations["nudge.dev/applied-fingerprint"] }).
		WithTimeout(20*time.Second).ShouldNot(Equal(before), "a baseline under the new key")
	e.RolledTo("web", 0)
	_, err := fingerprint.LoadKey(e.Ctx, suite.K8s, e.NS, options.Default().KeySecret)
	e.G.Expect(err).NotTo(HaveOccurred(), "a new key was created")
}
