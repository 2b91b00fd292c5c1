package chaos

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// fanOut creates one ConfigMap, "shared", and n Deployments that read it,
// each opted in; it returns their names.
func (e *env) fanOut(n int) []string {
	e.t.Helper()
	names := deploymentNames(n)
	objs := []client.Object{nt.ConfigMap(e.ns, "shared", map[string]string{"v": "1"})}
	for _, name := range names {
		objs = append(objs, nt.Deployment(e.ns, name, 1, auto, nt.EnvFrom("ConfigMap", "shared")))
	}
	e.create(objs...)
	return names
}

// nudge killed with SIGKILL in the middle of a fan-out: the nudge started
// after it rolls the rest, and no workload is rolled twice. nudge's API
// rate is lowered so that the fan-out lasts long enough to be cut.
func TestKillDuringFanOutRollsEachOnce(t *testing.T) {
	e := setup(t, plane, k8s)
	n := size(200, 500)
	names := e.fanOut(n)
	kubeconfig := plane.Kubeconfig()
	slow := []string{"--kube-api-qps=100", "--kube-api-burst=10"}
	first := e.nudge(kubeconfig, slow...)
	e.baselined(n)

	e.updateConfigMap("shared", "v", "2")
	e.rolledBetween(n/10, n*9/10)
	e.g.Expect(first.Kill()).To(Succeed())
	killedAt, err := e.rollouts.Total()
	e.g.Expect(err).NotTo(HaveOccurred())
	t.Logf("Killed nudge after %d of %d rollouts", killedAt, n)
	e.g.Expect(killedAt).To(BeNumerically("<", n), "the kill left Deployments to roll")

	e.nudge(kubeconfig)
	e.rolledEach(names, 1)
}

// Two replicas with leader election; the leader killed with SIGKILL in the
// middle of a fan-out. The other takes the Lease once it expires and rolls
// the rest; no workload is rolled twice. The API rate is lowered as above.
func TestLeaderKilledStandbyRollsEachOnce(t *testing.T) {
	e := setup(t, plane, k8s)
	n := size(100, 500)
	names := e.fanOut(n)
	kubeconfig := plane.Kubeconfig()
	args := []string{"--leader-elect", "--kube-api-qps=50", "--kube-api-burst=10",
		"--leader-election-lease-duration=6s", "--leader-election-renew-deadline=5s", "--leader-election-retry-period=1s"}
	replicas := []*nt.Process{e.nudge(kubeconfig, args...), e.nudge(kubeconfig, args...)}
	const acquired = "Successfully acquired lease"
	leader := func() int {
		for i, r := range replicas {
			if strings.Contains(r.Output(), acquired) {
				return i
			}
		}
		return -1
	}
	e.g.Eventually(leader).WithTimeout(30*time.Second).Should(BeNumerically(">=", 0), "a replica to lead")
	l := leader()
	standby := replicas[1-l]
	e.baselined(n)
	e.g.Expect(standby.Output()).NotTo(ContainSubstring(acquired), "one leader")

	e.updateConfigMap("shared", "v", "2")
	e.rolledBetween(n/10, n*9/10)
	e.g.Expect(replicas[l].Kill()).To(Succeed())
	killedAt, err := e.rollouts.Total()
	e.g.Expect(err).NotTo(HaveOccurred())
	t.Logf("Killed the leader after %d of %d rollouts", killedAt, n)
	e.g.Expect(killedAt).To(BeNumerically("<", n), "the kill left Deployments to roll")

	e.g.Eventually(standby.Output).WithTimeout(30*time.Second).Should(ContainSubstring(acquired), "the standby to take the Lease")
	e.rolledEach(names, 1)
}
