package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// TestPodReloaderRollsStatefulSetsAndDaemonSets: SAP pod-reloader's
// pod-reloader.cs.sap.com/configmaps and .../secrets roll a StatefulSet and
// a DaemonSet, as they do a Deployment, exactly once per data change of a
// source they name (read by the pod spec or not), and never for a source
// the pod spec reads that they do not name. Rollouts are counted as
// pod-template changes from a watch (no workload controller runs).
func TestPodReloaderRollsStatefulSetsAndDaemonSets(t *testing.T) {
	t.Parallel()
	annotations := map[string]string{
		"pod-reloader.cs.sap.com/configmaps": "cfg, extra",
		"pod-reloader.cs.sap.com/secrets":    "db",
	}
	pod := []nt.PodOption{nt.EnvFrom("ConfigMap", "cfg"), nt.Volume("Secret", "db"),
		nt.EnvFrom("ConfigMap", "unnamed"), nt.Volume("Secret", "unnamed")}
	tests := map[string]struct {
		workload func(ns string) client.Object
		list     client.ObjectList
	}{
		"StatefulSet": {
			workload: func(ns string) client.Object { return nt.StatefulSet(ns, "w", 2, annotations, pod...) },
			list:     &appsv1.StatefulSetList{},
		},
		"DaemonSet": {
			workload: func(ns string) client.Object { return nt.DaemonSet(ns, "w", annotations, pod...) },
			list:     &appsv1.DaemonSetList{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
			tw := nt.WatchTemplatesOf(t, suite.K8s, e.NS, tc.list)
			w := tc.workload(e.NS)
			e.Create(nt.ConfigMap(e.NS, "cfg", map[string]string{"a": "1"}),
				nt.ConfigMap(e.NS, "extra", map[string]string{"x": "1"}),
				nt.ConfigMap(e.NS, "unnamed", map[string]string{"u": "1"}),
				nt.Secret(e.NS, "db", map[string]string{"password": "hunter2"}),
				nt.Secret(e.NS, "unnamed", map[string]string{"password": "hunter3"}),
				w)
			e.BaselinedObj(w)
			e.G.Consistently(func() int64 { return tw.Count("w") }).WithTimeout(2*time.Second).Should(BeZero(), "no rollout at first sight")

			var want int64
			for _, change := range []string{"ConfigMap/cfg", "Secret/db", "ConfigMap/extra", "ConfigMap/cfg"} {
				e.changeData(change)
				want++
				e.G.Eventually(func() int64 { return tw.Count("w") }).WithTimeout(10*time.Second).Should(BeNumerically(">=", want),
					"%s w to roll for a change of %s it names", name, change)
				e.G.Consistently(func() int64 { return tw.Count("w") }).WithTimeout(3*time.Second).Should(Equal(want),
					"%s w to roll once for a change of %s", name, change)
			}
			for _, change := range []string{"ConfigMap/unnamed", "Secret/unnamed"} {
				e.changeData(change)
				e.G.Consistently(func() int64 { return tw.Count("w") }).WithTimeout(3*time.Second).Should(Equal(want),
					"%s w left alone by a change of %s, read but not named", name, change)
			}
		})
	}
}
