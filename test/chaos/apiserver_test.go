package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// kube-apiserver killed and started again in the middle of a burst of
// changes (one Secret per Deployment): nudge's requests in flight are cut,
// its watches end and its informers list again; each Deployment is rolled
// once, whether its Secret changed before the restart or right after it.
// nudge's API rate is lowered so that the burst lasts long enough to be cut.
func TestAPIServerRestartDuringBurstRollsEachOnce(t *testing.T) {
	e := setup(t, plane, k8s)
	n := size(100, 200)
	names := deploymentNames(n)
	var objs []client.Object
	for i, name := range names {
		secret := fmt.Sprintf("secret-%03d", i)
		objs = append(objs, nt.Secret(e.ns, secret, map[string]string{"v": "1"}),
			nt.Deployment(e.ns, name, 1, auto, nt.EnvFrom("Secret", secret)))
	}
	e.create(objs...)
	p := e.nudge(plane.Kubeconfig(), "--kube-api-qps=50", "--kube-api-burst=10")
	e.baselined(n)

	e.updateSecrets(0, n/2)
	e.rolledBetween(n/20, n/2)
	before, err := e.rollouts.Total()
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(plane.RestartAPIServer(e.ctx)).To(Succeed())
	t.Logf("Killed kube-apiserver after %d of %d rollouts, and started it again", before, n)
	e.updateSecrets(n/2, n)

	e.rolledEach(names, 1)
	e.g.Expect(p.Exited()).To(BeFalse(), "nudge rides out the restart")
}

// updateSecrets changes Secrets secret-<from> to secret-<to-1>, 16 at a time.
func (e *env) updateSecrets(from, to int) {
	e.t.Helper()
	var eg errgroup.Group
	eg.SetLimit(16)
	for i := from; i < to; i++ {
		eg.Go(func() error {
			var s corev1.Secret
			key := client.ObjectKey{Namespace: e.ns, Name: fmt.Sprintf("secret-%03d", i)}
			if err := e.c.Get(e.ctx, key, &s); err != nil {
				return err
			}
			s.Data["v"] = []byte("2")
			return e.c.Update(e.ctx, &s)
		})
	}
	e.g.Expect(eg.Wait()).To(Succeed(), "updating Secrets %d to %d", from, to-1)
}

// etcd compacted while nudge is cut off from kube-apiserver, which serves
// watches from etcd (no watch cache): nudge's watches cannot resume, its
// informers list again, and of the change made during the gap and the
// sources that did not change, only the change rolls, once.
func TestCompactionRelistRollsOnlyTheChange(t *testing.T) {
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer, DisableWatchCache: true, AuditLog: true})
	c, err := newClient(p)
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, p, c)
	n := 20
	names := deploymentNames(n)
	var objs []client.Object
	for i, name := range names {
		cm := fmt.Sprintf("cfg-%03d", i)
		objs = append(objs, nt.ConfigMap(e.ns, cm, map[string]string{"v": "1"}),
			nt.Deployment(e.ns, name, 1, auto, nt.EnvFrom("ConfigMap", cm)))
	}
	e.create(objs...)
	// nudge reaches kube-apiserver through a proxy the test can cut, as a
	// user of its own so that the audit log tells its requests apart.
	cfg, err := p.UserConfig("nudge", "system:masters")
	e.g.Expect(err).NotTo(HaveOccurred())
	px := startProxy(t, strings.TrimPrefix(cfg.Host, "https://"))
	cfg.Host = px.URL()
	e.nudge(e.kubeconfig(cfg))
	e.baselined(n)

	px.Cut()
	e.updateConfigMap("cfg-007", "v", "2")
	// A write after the change: etcd keeps the revision it compacts to, and
	// nudge's watches must need one before it.
	e.create(nt.ConfigMap(e.ns, "after-the-change", nil))
	rev, err := p.CompactEtcd(e.ctx)
	e.g.Expect(err).NotTo(HaveOccurred())
	restored := time.Now()
	px.Restore()
	t.Logf("Compacted etcd at revision %d while nudge was cut off", rev)

	e.rolledEach([]string{"web-007"}, 1)
	e.g.Expect(relisted(t, p, restored)).To(BeTrue(), "nudge listed ConfigMaps again after the gap")
}

// relisted reports whether user nudge listed ConfigMaps (a LIST, or a watch
// that sends the initial state) after since, from the audit log.
func relisted(t *testing.T, p *testbed.Plane, since time.Time) bool {
	t.Helper()
	found := false
	_, err := testbed.ReadAuditLog(p.AuditLogPath(), 0, "nudge", func(ev testbed.AuditEvent) {
		if ev.Resource() != "configmaps" || ev.Received.Before(since) || ev.Code() != 200 {
			return
		}
		if ev.Verb == "list" || (ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true")) {
			found = true
		}
	})
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	return found
}
