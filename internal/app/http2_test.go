package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"nudge.dev/nudge/internal/admission"
	"nudge.dev/nudge/internal/options"
)

// The admission webhook's server offers HTTP/1.1 alone in its TLS
// handshake, so that no client can start HTTP/2 with it (rapid reset,
// CVE-2023-44487), unless --enable-http2 is given.
func TestWebhookServerHTTP2(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string // the protocol a client offering h2 and http/1.1 gets
	}{
		"by default a client offering h2 gets HTTP/1.1": {want: "http/1.1"},
		"with --enable-http2 it gets h2":                {args: []string{"--enable-http2"}, want: "h2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			pool := selfSignedCert(t, dir)
			addr := freeAddr(t)
			opts := options.Default()
			fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
			opts.BindFlags(fs)
			g.Expect(fs.Parse(append([]string{"--admission-webhook", "--admission-webhook-bind-address=" + addr,
				"--admission-webhook-cert-dir=" + dir}, tc.args...))).To(Succeed())
			srv, err := admission.NewServer(opts, tlsOpts(opts))
			g.Expect(err).NotTo(HaveOccurred())
			srv.Register("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			done := make(chan error, 1)
			go func() { done <- srv.Start(t.Context()) }()
			t.Cleanup(func() { g.Eventually(done).WithTimeout(10*time.Second).Should(Receive(), "the server to stop") })

			var conn *tls.Conn
			g.Eventually(func() (err error) {
				conn, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2", "http/1.1"}})
				return err
			}).WithTimeout(10*time.Second).Should(Succeed(), "the webhook server to listen on %s", addr)
			defer conn.Close()
			g.Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal(tc.want))
		})
	}
}

// selfSignedCert writes tls.crt and tls.key, a self-signed certificate for
// 127.0.0.1, into dir and returns a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nudge-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// freeAddr returns 127.0.0.1 with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
