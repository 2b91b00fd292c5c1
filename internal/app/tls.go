package app

import (
	"crypto/tls"

	"nudge.dev/nudge/internal/options"
)

// tlsOpts returns the TLS settings of nudge's servers: without
// --enable-http2, a server offers HTTP/1.1 alone in its TLS handshake
// (ALPN), so no client can start HTTP/2 with it: HTTP/2's rapid reset
// (CVE-2023-44487, https://github.com/kubernetes/kubernetes/issues/121197)
// and its stream floods then cannot reach it. kubebuilder's scaffold does
// the same.
func tlsOpts(opts options.Options) []func(*tls.Config) {
	if opts.EnableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}
