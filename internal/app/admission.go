package app

import (
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
	return webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: opts.AdmissionWebhookCertDir}), nil
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
