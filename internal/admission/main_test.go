package admission_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/admission"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// suite is the kube-apiserver every test here talks to, and its client.
var suite nt.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// auto opts a workload in with nudge's own annotation.
var auto = map[string]string{"nudge.dev/auto": "true"}

// env is one test's namespace and nudge; hook is the webhook's address
// and the CA of its certificate, set when the nudge serves it.
type env struct {
	*nt.Env
	addr string
	ca   []byte
}

// setup creates a namespace for t and starts a nudge watching it (rollout
// window 0, then mutate applied), serving the admission webhook on
// 127.0.0.1 with a certificate of a CA made for the test when webhook is
// true, and registering it for the test's namespace alone, by URL.
func setup(t *testing.T, webhook bool, mutate ...func(*options.Options)) *env {
	t.Helper()
	e := &env{Env: suite.Setup(t, false, nil)}
	var dir string
	if webhook {
		dir = t.TempDir()
		e.ca = servingCert(t, dir)
		e.addr = nt.FreeAddr(t)
	}
	envVars := false
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
		o.RolloutWindow = 0
		if webhook {
			o.AdmissionWebhook, o.AdmissionWebhookAddr, o.AdmissionWebhookCertDir = true, e.addr, dir
		}
		for _, m := range mutate {
			m(o)
		}
		envVars = o.ReloadStrategy == "env-vars"
	})
	if webhook {
		e.register(envVars)
	}
	return e
}

// customKinds are custom kinds whose webhooks register registers too, so
// that the API server checks their matchConditions: Knative's Service (the
// template's own annotations) and KEDA's ScaledJob (a template deeper in).
var customKinds = []workload.CustomKind{
	{APIVersion: "serving.knative.dev/v1", Kind: "Service", Resource: "services", TemplatePath: "spec.template"},
	{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", Resource: "scaledjobs", TemplatePath: "spec.jobTargetRef.template",
		TriggerPath: "spec.jobTargetRef.template.metadata.annotations"},
}

// register creates a MutatingWebhookConfiguration, the webhooks of
// admission.Webhooks (for Reloader's env-vars strategy when envVars, and
// customKinds), for the test's namespace alone, that calls the webhook at
// https://<e.addr>/keep-trigger; deleted when the test ends.
func (e *env) register(envVars bool) {
	e.T.Helper()
	cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + e.addr + admission.Path), CABundle: e.ca}
	hooks := admission.Webhooks(cc, envVars, customKinds)
	for i := range hooks {
		hooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.NS}}
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "keep-trigger-" + e.NS}, Webhooks: hooks}
	e.Create(cfg)
	e.T.Cleanup(func() {
		// Not e.Ctx: it ends before the test's cleanup runs.
		if err := suite.K8s.Delete(context.Background(), cfg); err != nil && !apierrors.IsNotFound(err) {
			e.T.Errorf("Deleting %s: %v", cfg.Name, err)
		}
	})
}

// servingCert writes tls.crt and tls.key for 127.0.0.1, issued by a CA made
// for the purpose, into dir; it returns the CA's certificate (PEM).
func servingCert(t *testing.T, dir string) []byte {
	t.Helper()
	g := NewWithT(t)
	tmpl := func(cn string) *x509.Certificate {
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		g.Expect(err).NotTo(HaveOccurred())
		return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	caTmpl := tmpl("nudge-webhook-ca")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage |= x509.KeyUsageCertSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	g.Expect(err).NotTo(HaveOccurred())

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	srv := tmpl("nudge-webhook")
	srv.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	srv.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	der, err := x509.CreateCertificate(rand.Reader, srv, ca, key.Public(), caKey)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		g.Expect(os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600)).To(Succeed(), fmt.Sprintf("writing %s", name))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
