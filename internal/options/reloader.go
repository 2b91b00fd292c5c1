package options

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"nudge.dev/nudge/internal/dialect"
)

// Reloader holds the flags nudge takes from Stakater Reloader beyond those
// it shares with controller-runtime's conventions, so that a Reloader
// Deployment's args start nudge unchanged. The flags and their meanings are
// Reloader's: v1 (internal/pkg/util.ConfigureReloaderFlags,
// https://github.com/stakater/Reloader/blob/v1.4.5/internal/pkg/util/util.go)
// and the current ones
// (https://github.com/stakater/Reloader/blob/master/internal/pkg/config/flags/flags.go).
type Reloader struct {
	// Annotations are the names of Reloader's annotations nudge reads
	// (--auto-annotation, --configmap-annotation, ...,
	// --secretproviderclass-annotation).
	Annotations dialect.ReloaderNames

	// ArgoRollouts is --is-Argo-Rollouts: handle Argo Rollouts. nudge's
	// default is true (a Rollout is handled once its CRD is served);
	// --is-Argo-Rollouts=false, Reloader's default, leaves Rollouts alone
	// like --ignored-workload-types=rollouts.
	ArgoRollouts bool
	// IsOpenShift is --is-openshift: "true", "false", "auto" or "" (auto).
	// nudge does not handle OpenShift DeploymentConfigs (deprecated by
	// OpenShift since 4.14); "true" is accepted with a warning at start.
	IsOpenShift string
	// SyncAfterRestart is --sync-after-restart. nudge is level-triggered
	// (changes made while it was down are rolled when it starts) whatever
	// its value, so it changes nothing.
	SyncAfterRestart bool
	// EnableCSIIntegration is --enable-csi-integration: watch the Secrets
	// Store CSI driver's SecretProviderClassPodStatuses (once the API serves
	// them), so that a rotation of a mounted SecretProviderClass rolls the
	// workloads that mount it.
	EnableCSIIntegration bool

	// EnablePprof is --enable-pprof: serve Go's pprof endpoints on PprofAddr
	// (unless --pprof-bind-address names an address itself).
	EnablePprof bool
	// PprofAddr is --pprof-addr, Reloader's pprof address (":6060").
	PprofAddr string

	// LeaderElectionNamespace is --leader-election-namespace: the Lease's
	// namespace; "" means the system namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are
	// --leader-election-lease-duration, -renew-deadline and -retry-period,
	// client-go's leader-election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel is --leader-election-release-on-cancel: give up the
	// Lease on a clean stop, so another replica takes over at once.
	ReleaseOnCancel bool

	// Alert holds Reloader's --alert-* flags as given ("" when not given);
	// they override the ALERT_* environment variables (see AlertEnv).
	Alert struct{ OnReload, WebhookURL, Sink, Proxy, AdditionalInfo, Structured string }
}

// DefaultReloader returns Reloader's defaults, except ArgoRollouts (nudge
// handles Rollouts unless told not to).
func DefaultReloader() Reloader {
	r := Reloader{
		Annotations:     dialect.DefaultReloaderNames(),
		ArgoRollouts:    true,
		PprofAddr:       ":6060",
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
	}
	return r
}

// bindReloaderFlags registers Reloader's flags that BindFlags does not.
func (o *Options) bindReloaderFlags(fs *pflag.FlagSet) {
	r := &o.Reloader
	a := &r.Annotations
	for _, f := range []struct {
		dst        *string
		name, help string
	}{
		{&a.Auto, "auto-annotation", "Reloader's auto annotation, renamed."},
		{&a.ConfigMapAuto, "configmap-auto-annotation", "Reloader's ConfigMap auto annotation, renamed."},
		{&a.SecretAuto, "secret-auto-annotation", "Reloader's Secret auto annotation, renamed."},
		{&a.ConfigMapReload, "configmap-annotation", "Reloader's ConfigMap reload annotation, renamed."},
		{&a.SecretReload, "secret-annotation", "Reloader's Secret reload annotation, renamed."},
		{&a.ConfigMapExclude, "configmap-exclude-annotation", "Reloader's ConfigMap exclude annotation, renamed."},
		{&a.SecretExclude, "secret-exclude-annotation", "Reloader's Secret exclude annotation, renamed."},
		{&a.Search, "auto-search-annotation", "Reloader's search annotation, renamed."},
		{&a.Match, "search-match-annotation", "Reloader's match annotation (on sources), renamed."},
		{&a.Ignore, "ignore-annotation", "Reloader's ignore annotation (on sources), renamed."},
		{&a.PausePeriod, "pause-deployment-annotation", "Reloader's Deployment pause-period annotation, renamed."},
		{&a.PausedAt, "pause-deployment-time-annotation", "Reloader's paused-at annotation, renamed."},
		{&a.SecretProviderClassAuto, "secretproviderclass-auto-annotation", "Reloader's SecretProviderClass auto annotation, renamed."},
		{&a.SecretProviderClassReload, "secretproviderclass-annotation", "Reloader's SecretProviderClass reload annotation, renamed."},
		{&a.SecretProviderClassExclude, "secretproviderclass-exclude-annotation", "Reloader's SecretProviderClass exclude annotation, renamed."},
	} {
		fs.StringVar(f.dst, f.name, *f.dst, f.help)
	}
	fs.BoolVar(&r.ArgoRollouts, "is-Argo-Rollouts", r.ArgoRollouts, `Handle Argo Rollouts; "false" leaves them alone (Reloader's default is false).`)
	fs.StringVar(&r.IsOpenShift, "is-openshift", r.IsOpenShift, `Reloader's OpenShift DeploymentConfig support: "true", "false" or "auto"; nudge handles no DeploymentConfigs.`)
	fs.BoolVar(&r.SyncAfterRestart, "sync-after-restart", r.SyncAfterRestart, "Accepted for Reloader; nudge always acts on changes made while it was down.")
	fs.BoolVar(&r.EnableCSIIntegration, "enable-csi-integration", r.EnableCSIIntegration, "Roll workloads when the Secrets Store CSI driver rotates a SecretProviderClass they mount (watches secretproviderclasspodstatuses once served).")
	fs.BoolVar(&r.EnablePprof, "enable-pprof", r.EnablePprof, "Serve Go's pprof endpoints on --pprof-addr.")
	fs.StringVar(&r.PprofAddr, "pprof-addr", r.PprofAddr, "Address of the pprof endpoints with --enable-pprof.")
	fs.StringVar(&r.LeaderElectionNamespace, "leader-election-namespace", r.LeaderElectionNamespace, "Namespace of the leader-election Lease; the system namespace when empty.")
	fs.DurationVar(&r.LeaseDuration, "leader-election-lease-duration", r.LeaseDuration, "How long a standby waits after the leader's last renewal before taking the Lease.")
	fs.DurationVar(&r.RenewDeadline, "leader-election-renew-deadline", r.RenewDeadline, "How long the leader retries renewing the Lease before it stops leading.")
	fs.DurationVar(&r.RetryPeriod, "leader-election-retry-period", r.RetryPeriod, "Wait between leader-election attempts.")
	fs.BoolVar(&r.ReleaseOnCancel, "leader-election-release-on-cancel", r.ReleaseOnCancel, "Give up the Lease on a clean stop.")
	for _, f := range []struct {
		dst        *string
		name, help string
		boolean    bool
	}{
		{&r.Alert.OnReload, "alert-on-reload", "Send an alert on each rollout (overrides ALERT_ON_RELOAD).", true},
		{&r.Alert.WebhookURL, "alert-webhook-url", "Alert webhook URL; turns alerts on (overrides ALERT_WEBHOOK_URL).", false},
		{&r.Alert.Sink, "alert-sink", "Alert format: slack, teams, gchat, raw or json (overrides ALERT_SINK).", false},
		{&r.Alert.Proxy, "alert-proxy", "HTTP proxy for alerts (overrides ALERT_WEBHOOK_PROXY).", false},
		{&r.Alert.AdditionalInfo, "alert-additional-info", "Text prefixed to each alert (overrides ALERT_ADDITIONAL_INFO).", false},
		{&r.Alert.Structured, "alert-structured", "With the raw sink, send JSON (the json sink) instead of text.", true},
	} {
		fs.StringVar(f.dst, f.name, *f.dst, f.help)
		if f.boolean {
			fs.Lookup(f.name).NoOptDefVal = "true"
		}
	}
}

// validateReloader returns the problems with Reloader's flags.
func (o *Options) validateReloader() []error {
	r := o.Reloader
	var errs []error
	a := r.Annotations
	for _, n := range []struct{ flag, value string }{
		{"--auto-annotation", a.Auto}, {"--configmap-auto-annotation", a.ConfigMapAuto},
		{"--secret-auto-annotation", a.SecretAuto}, {"--configmap-annotation", a.ConfigMapReload},
		{"--secret-annotation", a.SecretReload}, {"--configmap-exclude-annotation", a.ConfigMapExclude},
		{"--secret-exclude-annotation", a.SecretExclude}, {"--auto-search-annotation", a.Search},
		{"--search-match-annotation", a.Match}, {"--ignore-annotation", a.Ignore},
		{"--pause-deployment-annotation", a.PausePeriod}, {"--pause-deployment-time-annotation", a.PausedAt},
		{"--secretproviderclass-auto-annotation", a.SecretProviderClassAuto},
		{"--secretproviderclass-annotation", a.SecretProviderClassReload},
		{"--secretproviderclass-exclude-annotation", a.SecretProviderClassExclude},
	} {
		if msgs := validation.IsQualifiedName(n.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not an annotation name: %s", n.flag, n.value, strings.Join(msgs, "; ")))
		}
	}
	switch strings.ToLower(strings.TrimSpace(r.IsOpenShift)) {
	case "", "auto", "true", "false":
	default:
		errs = append(errs, fmt.Errorf(`--is-openshift must be "true", "false" or "auto", got %q`, r.IsOpenShift))
	}
	// client-go's leaderelection.NewLeaderElector refuses these otherwise.
	if r.RetryPeriod <= 0 || r.RenewDeadline <= 0 || r.LeaseDuration <= 0 {
		errs = append(errs, errors.New("--leader-election-lease-duration, -renew-deadline and -retry-period must be positive"))
	} else {
		if r.LeaseDuration <= r.RenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)", r.LeaseDuration, r.RenewDeadline))
		}
		if float64(r.RenewDeadline) <= 1.2*float64(r.RetryPeriod) {
			errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than 1.2 × --leader-election-retry-period (%s)", r.RenewDeadline, r.RetryPeriod))
		}
	}
	for _, b := range []struct{ flag, value string }{{"--alert-on-reload", r.Alert.OnReload}, {"--alert-structured", r.Alert.Structured}} {
		if _, err := strconv.ParseBool(b.value); b.value != "" && err != nil {
			errs = append(errs, fmt.Errorf("%s must be true or false, got %q", b.flag, b.value))
		}
	}
	return errs
}

// PprofBindAddress returns where Go's pprof endpoints are served: the
// --pprof-bind-address when it is not "0", Reloader's --pprof-addr with
// --enable-pprof, else "0" (off).
func (o *Options) PprofBindAddress() string {
	if o.PprofAddr != "0" && o.PprofAddr != "" {
		return o.PprofAddr
	}
	if o.Reloader.EnablePprof {
		return o.Reloader.PprofAddr
	}
	return "0"
}

// LeaseNamespace returns the namespace of the leader-election Lease.
func (o *Options) LeaseNamespace() string {
	if o.Reloader.LeaderElectionNamespace != "" {
		return o.Reloader.LeaderElectionNamespace
	}
	return o.SystemNamespace
}

// AlertEnv returns getenv with Reloader's --alert-* flags laid over the
// ALERT_* variables they stand for, for alert.ConfigFromEnv. As in Reloader,
// --alert-webhook-url turns alerts on, and --alert-structured selects the
// structured (json) sink in place of the raw one.
func (o *Options) AlertEnv(getenv func(string) string) func(string) string {
	a := o.Reloader.Alert
	return func(k string) string {
		switch k {
		case "ALERT_ON_RELOAD":
			if a.WebhookURL != "" {
				return "true"
			}
			if a.OnReload != "" {
				b, _ := strconv.ParseBool(a.OnReload) // checked by Validate
				return strconv.FormatBool(b)
			}
		case "ALERT_WEBHOOK_URL":
			if a.WebhookURL != "" {
				return a.WebhookURL
			}
		case "ALERT_SINK":
			sink := getenv(k)
			if a.Sink != "" {
				sink = a.Sink
			}
			if s, _ := strconv.ParseBool(a.Structured); s {
				switch strings.ToLower(strings.TrimSpace(sink)) {
				case "", "raw", "webhook":
					return "json"
				}
			}
			return sink
		case "ALERT_WEBHOOK_PROXY":
			if a.Proxy != "" {
				return a.Proxy
			}
		case "ALERT_ADDITIONAL_INFO":
			if a.AdditionalInfo != "" {
				return a.AdditionalInfo
			}
		}
		return getenv(k)
	}
}

// JoinBoolArgs returns args with each boolean flag of fs written with a
// space before its value ("--reload-on-create true") joined into one
// argument ("--reload-on-create=true"). Reloader declares --is-Argo-Rollouts,
// --reload-on-create and --reload-on-delete as string flags, which take
// their value after a space; nudge's are booleans, which pflag reads only
// after "=". The next argument is joined only when it is a boolean
// (strconv.ParseBool); everything after "--" is left as it is.
func JoinBoolArgs(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, isFlag := strings.CutPrefix(a, "--")
		if f := fs.Lookup(name); isFlag && f != nil && f.NoOptDefVal != "" && i+1 < len(args) {
			if _, err := strconv.ParseBool(args[i+1]); err == nil {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}
