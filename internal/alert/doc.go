// Package alert posts a chat message or a JSON document each time nudge rolls
// a workload: Stakater Reloader's "alerting on reload", configured by the same
// environment variables (ALERT_ON_RELOAD, ALERT_SINK, ALERT_WEBHOOK_URL,
// ALERT_ADDITIONAL_INFO, ALERT_WEBHOOK_PROXY) and sending the same payloads
// to Slack, Microsoft Teams, Google Chat or a plain webhook.
//
// Reloader's documentation:
// https://github.com/stakater/Reloader/blob/master/docs/Alerting.md and
// https://docs.stakater.com/reloader/1.4/how-to-guides/alerting-on-reload.html.
//
// The message is Reloader's, with nudge's name and one entry per changed
// source; the chat sinks bold the names (*...*), the raw sink does not:
//
//	cluster: prod : nudge detected changes in *ConfigMap shop/app*, *Secret shop/db*. Hence reloaded *web* of type *Deployment* in namespace *shop*
//
// A [Sender] never blocks its caller: [Sender.Send] puts the alert on a
// bounded queue that one worker, run by [Sender.Start] as a controller-runtime
// Runnable (mgr.Add(sender)), drains with per-attempt timeouts and bounded
// retries. Webhook URLs carry their token in the path or query, so logs and
// errors name only the URL's scheme and host.
//
// Reloader's --webhook-url mode (POST to a URL instead of rolling) uses a
// second Sender with [SinkJSON], whose body keeps the constant field
// Reloader sends, {"webhook":"update successful"}, and adds the workload and
// its sources:
//
//	alert.NewSender(alert.Config{Enabled: true, Sink: alert.SinkJSON, WebhookURL: opts.WebhookURL,
//		Timeout: alert.DefaultTimeout, Retries: alert.DefaultRetries}, nil, log)
package alert
