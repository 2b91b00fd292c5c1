package app

import (
	"crypto/tls"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"nudge.dev/nudge/internal/admission"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// webhookServer returns the admission webhook server of opts
// (--admission-webhook-bind-address, --admission-webhook-cert-dir); nil
// without --admission-webhook, and then nudge serves none.
func webhookServer(opts options.Options) (webhook.Server, error) {
	if !opts.AdmissionWebhook {
		return nil, nil
	}
	host, port, err := opts.AdmissionWebhookHostPort()
	if err != nil {
		return nil, err
	}
	return webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: opts.AdmissionWebhookCertDir, TLSOpts: tlsOpts(opts)}), nil
}

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

// addAdmissionWebhook serves the webhook of package admission with
// --admission-webhook, on every replica (a webhook server needs no
// leadership), for every kind nudge rolls. The replica is ready once it
// serves (the readiness check "webhook").
func addAdmissionWebhook(mgr ctrl.Manager, opts options.Options, custom []workload.CustomKind) error {
	if !opts.AdmissionWebhook {
		return nil
	}
	srv := mgr.GetWebhookServer()
	h := &admission.Handler{Kinds: admission.Kinds(custom), EnvVars: opts.ReloadStrategy == "env-vars"}
	srv.Register(admission.Path, h.Webhook())
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return fmt.Errorf("adding the admission webhook's readiness check: %w", err)
	}
	return nil
}
