package controller_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// With leader election, every replica becomes ready once its caches are
// synced (a Deployment of nudge must be able to roll), one holds the Lease,
// and a change rolls once.
func TestLeaderElectionEveryReplicaReady(t *testing.T) {
	e := setup(t, false, nil)
	ports, err := testbed.FreePorts(2)
	e.G.Expect(err).NotTo(HaveOccurred())
	for _, port := range ports {
		nt.Start(t, plane.Config(), e.NS, func(o *options.Options) {
			o.LeaderElect = true
			o.ProbeAddr = fmt.Sprintf("127.0.0.1:%d", port)
			o.RolloutWindow = 0
		})
	}
	for _, port := range ports {
		e.G.Eventually(func() int {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}).WithTimeout(20*time.Second).Should(Equal(http.StatusOK), "replica on port %d ready", port)
	}
	e.G.Eventually(func() string {
		var l coordinationv1.Lease
		if err := k8s.Get(e.Ctx, client.ObjectKey{Namespace: e.NS, Name: options.Default().LeaderElectionID}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "a leader")

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
}
