package admission

import (
	"crypto/tls"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// NewServer returns the webhook server of opts
// (--admission-webhook-bind-address, --admission-webhook-cert-dir) with the
// TLS settings tlsOpts, for the manager's options; nil without
// --admission-webhook, and then nudge serves none. It returns the error of
// an address that is not host:port.
func NewServer(opts options.Options, tlsOpts []func(*tls.Config)) (webhook.Server, error) {
	if !opts.AdmissionWebhook {
		return nil, nil
	}
	host, port, err := opts.AdmissionWebhookHostPort()
	if err != nil {
		return nil, err
	}
	return webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: opts.AdmissionWebhookCertDir, TLSOpts: tlsOpts}), nil
}

// Serve serves the webhook (Handler, at Path) on mgr's webhook server with
// --admission-webhook, on every replica (a webhook server needs no
// leadership), for every kind nudge rolls, the custom kinds included. The
// replica is ready once it serves (the readiness check "webhook"). It
// returns the manager's error adding that check; without the flag it does
// nothing.
func Serve(mgr ctrl.Manager, opts options.Options, custom []workload.CustomKind) error {
	if !opts.AdmissionWebhook {
		return nil
	}
	srv := mgr.GetWebhookServer()
	h := &Handler{Kinds: Kinds(custom), EnvVars: opts.ReloadStrategy == "env-vars"}
	srv.Register(Path, h.Webhook())
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return fmt.Errorf("adding the admission webhook's readiness check: %w", err)
	}
	return nil
}
