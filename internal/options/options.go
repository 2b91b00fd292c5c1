// Package options holds nudge's command-line options: their flags, defaults
// and validation. Flag names and meanings follow Stakater Reloader's where
// they exist (https://github.com/stakater/Reloader#helm-charts) and
// controller-runtime's conventions otherwise.
package options

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options configure one nudge process.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file; "" means in-cluster (or
	// $KUBECONFIG, as client-go resolves it).
	Kubeconfig string
	// QPS and Burst bound nudge's requests to the API server.
	QPS   float32
	Burst int

	// MetricsAddr and ProbeAddr are the bind addresses of the metrics and
	// health-probe servers; "0" disables one.
	MetricsAddr string
	ProbeAddr   string

	// LeaderElect turns on leader election (Reloader: --enable-ha).
	LeaderElect bool
	// SystemNamespace is nudge's own namespace: it holds the fingerprint key
	// Secret and the leader-election Lease.
	SystemNamespace string
	// KeySecret is the name of the Secret holding the fingerprint key.
	KeySecret string

	// Namespaces limits what is watched; empty means every namespace.
	Namespaces []string

	// RolloutWindow: changes within this time after a rollout fold into one
	// trailing rollout at its end. Overridden per workload by the annotation
	// nudge.dev/rollout-window.
	RolloutWindow time.Duration
	// Workers is the number of concurrent reconciles per workload kind.
	Workers int

	// LogFormat is "text" (default) or "json"; LogLevel one of LogLevels.
	LogFormat string
	LogLevel  string
}

// LogLevels are the accepted values of --log-level, as Reloader names them.
var LogLevels = []string{"trace", "debug", "info", "warning", "error", "fatal", "panic"}

// Default returns the options with every default set.
func Default() Options {
	return Options{
		QPS:             200,
		Burst:           400,
		MetricsAddr:     ":9090",
		ProbeAddr:       ":8081",
		SystemNamespace: "nudge-system",
		KeySecret:       "nudge-fingerprint-key",
		RolloutWindow:   5 * time.Second,
		Workers:         8,
		LogFormat:       "text",
		LogLevel:        "info",
	}
}

// BindFlags registers every option on fs, with o's current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path of a kubeconfig file; in-cluster configuration when empty.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the API server.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, `Address of the health probes; "0" disables them.`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so several replicas can run (same as --enable-ha).")
	fs.BoolVar(&o.LeaderElect, "enable-ha", o.LeaderElect, "Reloader's name for --leader-elect.")
	fs.StringVar(&o.SystemNamespace, "system-namespace", o.SystemNamespace, "nudge's own namespace, holding its key Secret and leader-election Lease (defaults to $POD_NAMESPACE when set).")
	fs.StringVar(&o.KeySecret, "key-secret", o.KeySecret, "Name of the Secret holding the fingerprint key; created at first start.")
	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Comma-separated namespaces to watch; all when empty.")
	fs.DurationVar(&o.RolloutWindow, "rollout-window", o.RolloutWindow, "Changes within this time after a rollout fold into one trailing rollout (annotation nudge.dev/rollout-window overrides it).")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Concurrent reconciles per workload kind.")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, `Log format: "text" or "json".`)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: "+strings.Join(LogLevels, ", ")+".")
}

// Validate returns every problem with o, joined; nil when o is usable.
func (o *Options) Validate() error {
	var errs []error
	if o.QPS <= 0 || o.Burst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.QPS, o.Burst))
	}
	if o.SystemNamespace == "" {
		errs = append(errs, errors.New("--system-namespace must not be empty"))
	}
	if o.KeySecret == "" {
		errs = append(errs, errors.New("--key-secret must not be empty"))
	}
	if o.RolloutWindow < 0 {
		errs = append(errs, fmt.Errorf("--rollout-window must not be negative, got %s", o.RolloutWindow))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.Workers))
	}
	if o.LogFormat != "text" && o.LogFormat != "json" && o.LogFormat != "" {
		errs = append(errs, fmt.Errorf(`--log-format must be "text" or "json", got %q`, o.LogFormat))
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		errs = append(errs, fmt.Errorf("--log-level must be one of %s, got %q", strings.Join(LogLevels, ", "), o.LogLevel))
	}
	for _, ns := range o.Namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("--namespaces has an empty entry"))
			break
		}
	}
	return errors.Join(errs...)
}
