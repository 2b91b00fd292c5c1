package producer_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/testbed"
)

// TestExternalSecret: a Secret an ExternalSecret controls waits for it.
// Not Ready (no condition, then a failed sync) it is known and not ready;
// Ready and synced at its generation, ready, and the hook is called with
// the Secret at each change of its status; a new generation not synced yet
// is not ready; one that writes another Secret is known for that one
// alone, and the hook is called with both; a deleted ExternalSecret is no
// longer known. The owner reference's API version (v1beta1 here, the
// watch's is v1) does not matter.
func TestExternalSecret(t *testing.T) {
	t.Parallel()
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))
	e := setup(t, suite.Plane, suite.K8s)
	es := e.externalSecret("v1beta1", "db-es", "db")
	e.create(es)
	secret := e.secret("db", nil, es)
	e.create(secret)
	producerName := "ExternalSecret " + e.ns + "/db-es"

	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Reason: "no Ready condition yet"},
		"an ExternalSecret with no status yet")

	e.forget()
	failed := readyCondition("False", "SecretSyncedError", "could not get secret data from provider", 0)
	failed["syncedResourceVersion"] = "1-3b1c0e"
	e.setStatus(es, failed)
	e.becomes(secret, producer.Status{Known: true, Producer: producerName,
		Reason: "Ready is False: SecretSyncedError: could not get secret data from provider"}, "a failed sync")
	e.g.Eventually(e.hookedWith("db")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret on a status change")

	e.forget()
	synced := readyCondition("True", "SecretSynced", "secret synced", 0)
	synced["syncedResourceVersion"] = "1-3b1c0e"
	e.setStatus(es, synced)
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Ready: true}, "a sync at its generation")
	e.g.Eventually(e.hookedWith("db")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret when it turned Ready")

	e.setSpec(es, "2h", "refreshInterval")
	e.g.Expect(es.GetGeneration()).To(Equal(int64(2)))
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Reason: "last synced generation 1, not 2 yet"},
		"a new generation, still Ready from the last sync")
	synced["syncedResourceVersion"] = "2-3b1c0e"
	e.setStatus(es, synced)
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Ready: true}, "synced at the new generation")

	e.forget()
	e.setSpec(es, "db-new", "target", "name")
	e.becomes(secret, producer.Status{}, "an ExternalSecret that writes another Secret now")
	e.g.Eventually(e.hookedWith("db")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret it wrote")
	e.g.Eventually(e.hookedWith("db-new")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret it writes")
	e.g.Expect(e.of(e.secret("db-new", nil, es))()).To(Equal(producer.Status{Known: true, Producer: producerName,
		Reason: "last synced generation 2, not 3 yet"}), "the Secret it writes now waits for its sync")

	e.forget()
	e.g.Expect(suite.K8s.Delete(e.ctx, es)).To(Succeed())
	e.becomes(e.secret("db-new", nil, es), producer.Status{}, "a deleted ExternalSecret")
	e.g.Eventually(e.hookedWith("db-new")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret on a delete")
	e.g.Expect(e.log()).NotTo(ContainSubstring(`"error"`), "nothing logged as an error")
}

// TestCertificate: a Secret cert-manager annotated with its Certificate's
// name waits for that Certificate: Ready only once its Ready condition is
// True for its current generation. A Secret that names a Certificate
// writing another Secret has no producer.
func TestCertificate(t *testing.T) {
	t.Parallel()
	nt.InstallCRD(t, suite.K8s, nt.CertificateCRD(t))
	e := setup(t, suite.Plane, suite.K8s)
	cert := e.certificate("web", "web-tls")
	e.create(cert)
	secret := e.secret("web-tls", map[string]string{producer.CertificateNameAnnotation: "web"}, nil)
	stale := e.secret("old-web-tls", map[string]string{producer.CertificateNameAnnotation: "web"}, nil)
	e.create(secret, stale)
	producerName := "Certificate " + e.ns + "/web"

	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Reason: "no Ready condition yet"}, "a Certificate not issued yet")
	e.g.Expect(e.of(stale)()).To(Equal(producer.Status{}), "the Certificate writes another Secret")

	e.setStatus(cert, readyCondition("False", "DoesNotExist", "Issuing certificate as Secret does not exist", 1))
	e.becomes(secret, producer.Status{Known: true, Producer: producerName,
		Reason: "Ready is False: DoesNotExist: Issuing certificate as Secret does not exist"}, "a Certificate being issued")

	e.forget()
	e.setStatus(cert, readyCondition("True", "Ready", "Certificate is up to date and has not expired", 1))
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Ready: true}, "an issued Certificate")
	e.g.Eventually(e.hookedWith("web-tls")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called with the Secret when it turned Ready")

	e.setSpec(cert, []any{"shop.example.com", "www.shop.example.com"}, "dnsNames")
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Reason: "Ready condition of generation 1, not 2 yet"},
		"a changed Certificate, still Ready for its last generation")
	e.setStatus(cert, readyCondition("True", "Ready", "Certificate is up to date and has not expired", 2))
	e.becomes(secret, producer.Status{Known: true, Producer: producerName, Ready: true}, "reissued for its new generation")
}

// TestNoProducer: a Secret with no producer, one controlled by an object of
// another kind and one whose ExternalSecret does not exist are not known,
// with no error; the producers of the watch's first list are known without
// the hook being called for them.
func TestNoProducer(t *testing.T) {
	t.Parallel()
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))
	nt.InstallCRD(t, suite.K8s, nt.CertificateCRD(t))
	ns, err := suite.Plane.GenerateNamespace(t.Context(), "producer-")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	// Created before the gate starts, in the namespace it will watch.
	early := &env{t: t, g: NewWithT(t), ctx: t.Context(), k8s: suite.K8s, ns: ns}
	es := early.externalSecret("v1", "listed", "")
	early.create(es)
	early.setStatus(es, readyCondition("True", "SecretSynced", "secret synced", 0))

	e := setupIn(t, suite.Plane.Config(), suite.K8s, ns)
	owned := e.secret("listed", nil, es)
	e.becomes(owned, producer.Status{Known: true, Producer: "ExternalSecret " + ns + "/listed", Ready: true},
		"an ExternalSecret of the first list, writing the Secret of its own name")

	byConfigMap := e.secret("by-configmap", nil, es)
	byConfigMap.OwnerReferences[0].APIVersion, byConfigMap.OwnerReferences[0].Kind = "v1", "ConfigMap"
	missing := es.DeepCopy()
	missing.SetName("missing")
	for desc, s := range map[string]*corev1.Secret{
		"a Secret with no owner nor annotation":         e.secret("plain", map[string]string{"team": "shop"}, nil),
		"a Secret controlled by a ConfigMap":            byConfigMap,
		"a Secret whose ExternalSecret does not exist":  e.secret("missing", nil, missing),
		"a Secret annotated with a missing Certificate": e.secret("tls", map[string]string{producer.CertificateNameAnnotation: "none"}, nil),
	} {
		st, err := e.gate.Of(e.ctx, s)
		e.g.Expect(err).NotTo(HaveOccurred(), desc)
		e.g.Expect(st).To(Equal(producer.Status{}), desc)
	}
	e.g.Consistently(e.hooks).WithTimeout(time.Second).Should(BeEmpty(), "no hook for the producers of the first list")
}

// TestInstalledAfterStart: on a plane where no producer CRD is installed,
// the gate knows no producer, with no error and nothing logged as an
// error; once the CRDs are installed it watches them without a restart
// (served discovery), and the hook is called for a producer created then.
// An ExternalSecret CRD that serves v1beta1 alone (an older External
// Secrets Operator) is watched in v1beta1, then in v1 once the CRD serves
// it too.
func TestInstalledAfterStart(t *testing.T) {
	t.Parallel()
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	c, err := nt.Client(p.Config())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	e := setup(t, p, c)
	annotated := e.secret("web-tls", map[string]string{producer.CertificateNameAnnotation: "web"}, nil)
	owned := e.secret("db", nil, e.externalSecret("v1", "db", ""))
	owned.OwnerReferences[0].UID = "6d1f0c2a" // not created yet
	for _, s := range []*corev1.Secret{annotated, owned} {
		st, err := e.gate.Of(e.ctx, s)
		e.g.Expect(err).NotTo(HaveOccurred())
		e.g.Expect(st).To(Equal(producer.Status{}), "no CRD installed: %s", s.Name)
	}
	e.g.Eventually(e.log).WithTimeout(10 * time.Second).Should(ContainSubstring("Waiting for the API server to serve a kind"))

	nt.InstallCRD(t, c, nt.CertificateCRD(t))
	e.g.Eventually(e.log).WithTimeout(30*time.Second).Should(ContainSubstring(`"msg"="Started watching producers" "kind"="cert-manager.io/v1, Kind=Certificate"`),
		"the gate to start watching Certificates")
	cert := e.certificate("web", "web-tls")
	e.create(cert)
	e.setStatus(cert, readyCondition("True", "Ready", "Certificate is up to date and has not expired", 1))
	e.becomes(annotated, producer.Status{Known: true, Producer: "Certificate " + e.ns + "/web", Ready: true},
		"a Certificate created once its CRD is installed")
	e.g.Eventually(e.hookedWith("web-tls")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called for a Certificate created")

	crd := nt.ExternalSecretCRD(t)
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.Served, v.Storage = v.Name == "v1beta1", v.Name == "v1beta1"
	}
	// v1beta1 first: InstallCRD waits for the first version to be mapped.
	slices.SortFunc(crd.Spec.Versions, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
		return strings.Compare(b.Name, a.Name)
	})
	nt.InstallCRD(t, c, crd)
	es := e.externalSecret("v1beta1", "db", "")
	e.create(es)
	producerName := "ExternalSecret " + e.ns + "/db"
	e.becomes(owned, producer.Status{Known: true, Producer: producerName, Reason: "no Ready condition yet"},
		"an ExternalSecret of a CRD that serves v1beta1 alone")
	e.g.Eventually(e.hookedWith("db")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called for an ExternalSecret created")
	e.g.Expect(e.log()).To(ContainSubstring(`"kind"="external-secrets.io/v1beta1, Kind=ExternalSecret"`))

	e.g.Eventually(func() error {
		if err := c.Get(e.ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Served = true
		}
		return c.Update(e.ctx, crd)
	}).WithTimeout(10*time.Second).Should(Succeed(), "serving v1 too")
	e.g.Eventually(e.log).WithTimeout(30*time.Second).Should(ContainSubstring(`"msg"="Started watching producers" "kind"="external-secrets.io/v1, Kind=ExternalSecret"`),
		"the gate to move to v1")
	e.forget()
	e.setStatus(es, readyCondition("True", "SecretSynced", "secret synced", 0))
	e.becomes(owned, producer.Status{Known: true, Producer: producerName, Ready: true}, "read in v1")
	e.g.Eventually(e.hookedWith("db")).WithTimeout(10*time.Second).Should(BeTrue(), "the hook called from the watch of v1")
	e.g.Expect(e.log()).NotTo(ContainSubstring(`"error"`), "nothing logged as an error")
}

// TestForbidden: a user that may not list the producers (nudge's RBAC
// without them) gets one log line per kind and no watch: every Secret's
// producer is unknown, so none holds a rollout.
func TestForbidden(t *testing.T) {
	t.Parallel()
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))
	nt.InstallCRD(t, suite.K8s, nt.CertificateCRD(t))
	ns, err := suite.Plane.GenerateNamespace(t.Context(), "producer-")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	nobody, err := suite.Plane.UserConfig("nobody")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	e := setupIn(t, nobody, suite.K8s, ns)
	cert := e.certificate("web", "web-tls")
	e.create(cert)
	e.setStatus(cert, readyCondition("False", "DoesNotExist", "Issuing certificate as Secret does not exist", 1))
	e.g.Expect(strings.Count(e.log(), "Cannot list a producer kind")).To(Equal(2), "one line per kind: ExternalSecret (v1, then v1beta1 is not asked) and Certificate")
	e.g.Consistently(e.of(e.secret("web-tls", map[string]string{producer.CertificateNameAnnotation: "web"}, nil))).
		WithTimeout(time.Second).Should(Equal(producer.Status{}), "a producer nudge may not read holds nothing")
}
