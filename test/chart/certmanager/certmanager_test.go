package certmanager

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// certManagerCRDs are the files of cert-manager's CRDs in its module
// (nt.CertManager), every one its controller's informers list.
var certManagerCRDs = []string{
	"cert-manager.io_certificaterequests.yaml",
	"cert-manager.io_certificates.yaml",
	"cert-manager.io_clusterissuers.yaml",
	"cert-manager.io_issuers.yaml",
	"acme.cert-manager.io_challenges.yaml",
	"acme.cert-manager.io_orders.yaml",
}

// The chart with admissionWebhook.certManager.enabled beside the real
// cert-manager: cert-manager issues the webhook's certificate from the
// chart's self-signed Issuer, cainjector injects its CA into the webhooks
// the chart annotates with cert-manager.io/inject-ca-from, nudge serves the
// certificate from the Secret mounted as the chart mounts it, and the API
// server, verifying TLS against the injected caBundle, calls the webhook:
// an owner's full replace of a workload rolls nothing. Then the
// certificate is renewed through the Certificate API while nudge runs:
// nudge serves the new certificate without a restart, the caBundle follows,
// and the next owner's replace still rolls nothing.
func TestCertManagerIssuesAndRenewsTheWebhookCertificate(t *testing.T) {
	g := NewWithT(t)
	for _, file := range certManagerCRDs {
		nt.InstallCRD(t, k8s, nt.ModuleCRD(t, nt.CertManager, "deploy/crds/"+file))
	}
	ns := namespace(t, "cert-manager-")
	startCertManager(t, ns)
	m := helmChart(t, "install", ns, "admissionWebhook.enabled=true", "admissionWebhook.certManager.enabled=true")
	g.Expect(m.Get("Certificate", webhookName)).NotTo(BeNil(), "the chart's Certificate")
	g.Expect(m.Get("Issuer", webhookName)).NotTo(BeNil(), "the chart's self-signed Issuer")
	g.Expect(webhookConfig(t, ns).Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", ns+"/"+webhookName))

	// The testbed's stand-in for the Service: 127.0.0.1, in the
	// certificate and in the webhooks' clientConfig.
	crt := certificateObject(ns)
	g.Expect(k8s.Patch(t.Context(), crt, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"ipAddresses":["127.0.0.1"]}}`)))).To(Succeed())
	addr := nt.FreeAddr(t)
	pointAt(t, ns, addr)
	g.Expect(webhookConfig(t, ns).Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", ns+"/"+webhookName), "the annotation kept")

	var issued *corev1.Secret
	g.Eventually(func() []string {
		issued = &corev1.Secret{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: certSecret}, issued); err != nil {
			return nil
		}
		var ips []string
		for _, ip := range certificate(t, issued.Data[corev1.TLSCertKey]).IPAddresses {
			ips = append(ips, ip.String())
		}
		return ips
	}).WithTimeout(60*time.Second).Should(ContainElement("127.0.0.1"), "cert-manager to issue the certificate into Secret %s/%s", ns, certSecret)
	g.Expect(issued.Data).To(HaveKey(caKey), "the Secret holds its CA (ca.crt)")
	g.Eventually(caBundles(t, ns)).WithTimeout(60*time.Second).Should(HaveEach(ContainElement(caSerial(t, issued))),
		"cainjector to inject the certificate's CA into every webhook")

	certs := filepath.Join(t.TempDir(), "webhook-certs")
	mount(t, certs, issued)
	n := startNudge(t, m, ns, certs, addr)
	g.Eventually(func() string { return servedSerial(addr) }).WithTimeout(30*time.Second).Should(Equal(serial(t, issued).String()),
		"nudge to serve the issued certificate")

	o := newOwner(t, ns)
	o.baselined()
	o.change("1", 1)
	o.webhookServes("TLS verified against the injected caBundle")
	o.replaceRollsNothing()

	// Renewal, as `cmctl renew` forces it: the Certificate's Issuing
	// condition. The kubelet updates the mounted Secret; nudge reloads it.
	renew(t, ns)
	var renewed *corev1.Secret
	g.Eventually(func() string {
		renewed = secret(t, ns)
		return serial(t, renewed).String()
	}).WithTimeout(60*time.Second).ShouldNot(Equal(serial(t, issued).String()), "cert-manager to issue a new certificate")
	g.Expect(renewed.Data[caKey]).NotTo(Equal(issued.Data[caKey]), "a new self-signed CA")
	mount(t, certs, renewed)
	g.Eventually(func() string { return servedSerial(addr) }).WithTimeout(30*time.Second).Should(Equal(serial(t, renewed).String()),
		"nudge to serve the renewed certificate")
	g.Expect(n.Exited()).To(BeFalse(), "without a restart")
	g.Eventually(caBundles(t, ns)).WithTimeout(60*time.Second).Should(HaveEach(ContainElement(caSerial(t, renewed))),
		"cainjector to add the renewed CA to every webhook's caBundle")

	o.change("2", 2)
	o.webhookServes("TLS verified against the renewed caBundle")
	o.replaceRollsNothing()
}

// Without cert-manager the chart's Helm template generates a CA and a
// certificate into the Secret and the CA into the webhooks' caBundle, and
// keeps both across `helm upgrade` with a changed value by reading its
// Secret back (lookup, which `helm template` does not have: hence an
// install on the testbed). nudge serves that certificate, valid for the
// Service's name from the caBundle's CA, as the API server verifies it.
func TestCertManagerOffHelmKeepsItsCAAcrossUpgrades(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "helm-ca-")
	helmChart(t, "install", ns, "admissionWebhook.enabled=true")
	installed := secret(t, ns)
	ca := installed.Data[caKey]
	g.Expect(ca).NotTo(BeEmpty())
	g.Expect(caBundles(t, ns)()).To(HaveEach(Equal([]string{caSerial(t, installed)})), "the generated CA in every webhook's caBundle")

	m := helmChart(t, "upgrade", ns, "admissionWebhook.enabled=true", "admissionWebhook.timeoutSeconds=3")
	for _, h := range webhookConfig(t, ns).Webhooks {
		g.Expect(h.TimeoutSeconds).To(HaveValue(BeEquivalentTo(3)), "the upgrade applied to %s", h.Name)
	}
	upgraded := secret(t, ns)
	g.Expect(upgraded.Data).To(Equal(installed.Data), "the CA, certificate and key kept")
	g.Expect(caBundles(t, ns)()).To(HaveEach(Equal([]string{caSerial(t, installed)})), "the caBundle kept")

	certs := filepath.Join(t.TempDir(), "webhook-certs")
	mount(t, certs, upgraded)
	addr := nt.FreeAddr(t)
	startNudge(t, m, ns, certs, addr)
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(ca)).To(BeTrue())
	service := webhookName + "." + ns + ".svc"
	g.Eventually(func() error {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: service, MinVersion: tls.VersionTLS12})
		if err == nil {
			conn.Close()
		}
		return err
	}).WithTimeout(30*time.Second).Should(Succeed(), "nudge's certificate verified for %s against the kept caBundle", service)
}

// certificateObject is the chart's Certificate of ns, to read or patch.
func certificateObject(ns string) *unstructured.Unstructured {
	crt := &unstructured.Unstructured{}
	crt.SetAPIVersion("cert-manager.io/v1")
	crt.SetKind("Certificate")
	crt.SetNamespace(ns)
	crt.SetName(webhookName)
	return crt
}

// renew forces the renewal of the chart's Certificate of ns as `cmctl
// renew` does: its status condition Issuing set to True.
func renew(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	crt := certificateObject(ns)
	g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(crt), crt)).To(Succeed())
	conditions, _, _ := unstructured.NestedSlice(crt.Object, "status", "conditions")
	conditions = append(conditions, map[string]any{
		"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message": "Certificate re-issuance manually triggered", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	})
	g.Expect(unstructured.SetNestedSlice(crt.Object, conditions, "status", "conditions")).To(Succeed())
	g.Expect(k8s.Status().Update(t.Context(), crt)).To(Succeed(), "forcing the renewal of Certificate %s/%s", ns, webhookName)
}
