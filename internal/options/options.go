package options

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"nudge.dev/nudge/internal/shard"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/maintenance"
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
	// PprofAddr is the bind address of Go's pprof endpoints; "0" (the
	// default) disables them.
	PprofAddr string

	// LeaderElect turns on leader election (Reloader: --enable-ha).
	LeaderElect bool
	// LeaderElectionID names the leader-election Lease.
	LeaderElectionID string
	// DiscoveryInterval is how often nudge looks for a kind that is not served
	// yet (Argo Rollouts or a custom kind installed after nudge) when it may
	// not watch CustomResourceDefinitions and APIServices (a namespaced
	// install), and how often a ValueBinding whose target kind is not served
	// is tried again.
	DiscoveryInterval time.Duration
	// CustomKindsFile is the path of a YAML list of custom kinds nudge
	// handles like its built-in ones (see workload.CustomKind); "" for none.
	CustomKindsFile string
	// SystemNamespace is nudge's own namespace: it holds the fingerprint key
	// Secret and the leader-election Lease. "" means the namespace nudge runs
	// in: the pod's in a cluster, the kubeconfig context's outside one
	// (app.Run finds it).
	SystemNamespace string
	// KeySecret is the name of the Secret holding the fingerprint key.
	KeySecret string
	// SettingsConfigMap names the ConfigMap of the system namespace in
	// which the leader publishes its version and effective flags, none of
	// them secret, for kubectl nudge to find (see settings.Publish); ""
	// publishes nothing.
	SettingsConfigMap string

	// Namespaces limits what is watched; empty means every namespace.
	Namespaces []string
	// NamespacesToIgnore are never watched (Reloader: --namespaces-to-ignore).
	NamespacesToIgnore []string
	// NamespaceSelector, a label selector, limits the watched namespaces to
	// those it matches (Reloader: --namespace-selector).
	NamespaceSelector string
	// Shard limits the watched namespaces to those whose FNV-1a 64 hash
	// falls in a range: "i/N" or "0xSTART-0xEND" (see shard.Parse); empty
	// means every namespace.
	Shard string
	// ResourceLabelSelector, a label selector, limits the sources that count
	// to those it matches (Reloader: --resource-label-selector).
	ResourceLabelSelector string
	// ResourcesToIgnore are source kinds never watched: "configMaps",
	// "secrets" (Reloader: --resources-to-ignore).
	ResourcesToIgnore []string
	// IgnoredWorkloadTypes are workload kinds never handled, by their
	// lower-case plural: "jobs", "cronjobs", ... (Reloader:
	// --ignored-workload-types).
	IgnoredWorkloadTypes []string

	// AutoReloadAll puts every workload in auto mode unless it opts out with
	// an auto annotation "false" (Reloader: --auto-reload-all).
	AutoReloadAll bool
	// ReloadStrategy is the trigger: "annotations" (a pod-template
	// annotation, the default) or "env-vars" (Reloader's STAKATER_* env var).
	ReloadStrategy string
	// ReloadOnCreate rolls when a referenced source is created, even with the
	// content it had (Reloader: --reload-on-create).
	ReloadOnCreate bool
	// ReloadOnDelete rolls when a referenced source is deleted, even a
	// required one (Reloader: --reload-on-delete).
	ReloadOnDelete bool
	// WebhookURL, when set, receives a POST instead of a rollout (Reloader:
	// --webhook-url).
	WebhookURL string
	// RecreateJobs turns on Reloader's Job handling: a Job whose sources
	// changed is deleted and created again; between the two, the Job to
	// create is recorded in the Secret JobJournalSecret.
	RecreateJobs bool
	// CronJobStartJob starts a Job from a CronJob at once when its sources
	// change, as Reloader does, besides updating its job template.
	CronJobStartJob bool

	// CrossNamespaceReferences says what becomes of a source a workload
	// names in another namespace ("namespace/name" in nudge.dev/configmaps,
	// nudge.dev/secrets and Wave's extra-* lists): "allow" (the default, as
	// Wave reads them) counts it; "deny" refuses it: never read, it counts
	// for nothing, and a Warning CrossNamespaceRefused says so.
	CrossNamespaceReferences string
	// AllowWorkloadOverrides lets the annotations of workloads and
	// Namespaces loosen the limits the flags set (a shorter
	// nudge.dev/rollout-window, a larger or no
	// nudge.dev/max-rollouts-per-hour, a nudge.dev/maintenance-window open
	// while the flag's is closed). Without it they may only tighten them
	// (resolve.Resolver.Limits, resolve.Within).
	AllowWorkloadOverrides bool

	// RolloutWindow: changes within this time after a rollout fold into one
	// trailing rollout at its end. A workload's annotation
	// nudge.dev/rollout-window may lengthen it (shorten it too, with
	// AllowWorkloadOverrides).
	RolloutWindow time.Duration
	// Workers is the number of concurrent reconciles per workload kind.
	Workers int
	// MaxConcurrentRollouts bounds the workloads nudge has rolled whose
	// rollout is not complete yet; the others wait for a slot, in order of
	// nudge.dev/rollout-priority, and a failed rollout halts the rest of its
	// change (see docs/fleet-safety.md). 0, the default, is unlimited.
	MaxConcurrentRollouts int
	// RolloutTimeout is how long a rollout nudge started may take, with
	// MaxConcurrentRollouts set, before it counts as failed; 0 leaves only a
	// Deployment's progressDeadlineSeconds.
	RolloutTimeout time.Duration
	// MaxRolloutsPerHour is the storm brake: past this many rollouts of one
	// workload in a sliding hour, nudge holds its rollouts until the budget
	// frees. The annotation nudge.dev/max-rollouts-per-hour on the workload
	// may lower it (raise it or lift it too, with AllowWorkloadOverrides).
	// 0 is no limit.
	MaxRolloutsPerHour int
	// MaintenanceWindow is the maintenance window of every workload: a cron
	// schedule, a duration and an optional time zone, as maintenance.Parse
	// reads them ("0 2 * * 1-5 2h Europe/Berlin"). The annotation
	// nudge.dev/maintenance-window on a workload or its Namespace narrows it
	// (all must be open), or replaces it with AllowWorkloadOverrides. ""
	// means none: nudge rolls at any time. Maintenance parses it.
	MaintenanceWindow string
	// ProducerReadyTimeout is how long nudge waits at most for a Secret's
	// producer (an ExternalSecret, a cert-manager Certificate) to be Ready
	// before rolling for its change; 0 turns the gate off.
	ProducerReadyTimeout time.Duration

	// Alert configures Reloader's alerts on reload; main reads it from the
	// environment (alert.ConfigFromEnv), there are no flags for it.
	Alert alert.Config

	// ValueBindings turns on the ValueBinding controller (nudge.dev/v1alpha1):
	// without it nudge neither watches ValueBindings nor needs their RBAC.
	ValueBindings bool
	// ValueBindingTargets are the kinds a ValueBinding may write, each
	// "Kind.group" (schema.ParseGroupKind's form: "Harbor.goharbor.io") or
	// "Kind" for the core group. A binding whose target kind is not listed is
	// refused; empty refuses every binding.
	ValueBindingTargets []string
	// ValueBindingWorkers is the number of concurrent reconciles of
	// ValueBindings. A Secret bound by many bindings is applied to their
	// targets in parallel, each apply a round trip to the API server.
	ValueBindingWorkers int
	// Eviction says which workloads restart their pods through the Eviction
	// API.
	Eviction
	// MetricsByNamespace also counts Reloader's
	// reloader_reload_executed_total_by_namespace; main sets it from
	// Reloader's environment variable METRICS_COUNT_BY_NAMESPACE=enabled.
	MetricsByNamespace bool

	// AdmissionWebhook serves the mutating admission webhook that keeps
	// nudge's trigger on a workload's pod template when an owner's update
	// only drops it (package admission; SAP pod-reloader's webhook). The
	// webhook is registered by a MutatingWebhookConfiguration (the chart's
	// admissionWebhook values); nudge only serves it, on every replica.
	AdmissionWebhook bool
	// AdmissionWebhookAddr is the webhook server's bind address, host:port.
	AdmissionWebhookAddr string
	// AdmissionWebhookCertDir holds the webhook server's tls.crt and
	// tls.key, read again when they change; "" is controller-runtime's
	// default, <temp dir>/k8s-webhook-server/serving-certs.
	AdmissionWebhookCertDir string
	// EnableHTTP2 lets the admission webhook and metrics servers speak
	// HTTP/2 over TLS. Off, they offer HTTP/1.1 alone: HTTP/2's rapid reset
	// (CVE-2023-44487) and stream floods cost a server that does not need
	// HTTP/2 nothing to refuse.
	EnableHTTP2 bool

	// Reloader holds Reloader's other flags: annotation names, pprof,
	// leader-election timings, alerts, and those nudge accepts only to start.
	Reloader Reloader

	// LogFormat is "text" (default) or "json"; LogLevel one of LogLevels.
	// In "json" each line is one object in the shape of Reloader's
	// (logrus's JSON formatter): "level" named as Reloader names it
	// ("info", "warning", "error", "debug", "trace"), "msg", and "time" in
	// RFC 3339.
	LogFormat string
	LogLevel  string

	// EventReasons names the reasons of the Events of a rollout: "nudge"
	// (the default: Normal Rolled) or "reloader" (Reloader's: Normal
	// Reloaded, and Warning ReloadFail for a rollout write that failed,
	// with Reloader's messages).
	EventReasons string

	// Clock, when not nil, tells nudge's reconcilers the time instead of
	// the system clock. It has no flag: tests set it, to move time past a
	// maintenance window's opening or the storm brake's hour without
	// waiting.
	Clock clock.PassiveClock
}

// CrossNamespacePolicies are the accepted values of
// --cross-namespace-references.
var CrossNamespacePolicies = []string{"allow", "deny"}

// DenyCrossNamespace reports whether --cross-namespace-references is "deny".
func (o *Options) DenyCrossNamespace() bool { return o.CrossNamespaceReferences == "deny" }

// EventReasonSets are the accepted values of --event-reasons.
var EventReasonSets = []string{"nudge", "reloader"}

// LogLevels are the accepted values of --log-level, as Reloader names them.
var LogLevels = []string{"trace", "debug", "info", "warning", "error", "fatal", "panic"}

// WorkloadTypes are the values --ignored-workload-types accepts.
var WorkloadTypes = []string{"deployments", "statefulsets", "daemonsets", "cronjobs", "jobs", "rollouts"}

// JobJournalSecret returns the name of the Secret, in SystemNamespace, in
// which nudge records the Jobs it deleted to re-create and has not created
// yet (--recreate-jobs): the key Secret's name with "-jobs".
func (o *Options) JobJournalSecret() string { return o.KeySecret + "-jobs" }

// Ignores reports whether the workload kind with lower-case plural name
// plural is in IgnoredWorkloadTypes, or is "rollouts" with
// --is-Argo-Rollouts=false.
func (o *Options) Ignores(plural string) bool {
	if plural == "rollouts" && !o.Reloader.ArgoRollouts {
		return true
	}
	return slices.ContainsFunc(o.IgnoredWorkloadTypes, func(w string) bool { return strings.EqualFold(w, plural) })
}

// IgnoresSources reports whether source kind ("ConfigMap" or "Secret") is in
// ResourcesToIgnore.
func (o *Options) IgnoresSources(kind string) bool {
	return slices.ContainsFunc(o.ResourcesToIgnore, func(r string) bool { return strings.EqualFold(r, kind+"s") })
}

// BindingTargets returns ValueBindingTargets parsed as group kinds; an error
// names each entry that is not "Kind" or "Kind.group" with a kind that starts
// with an upper-case letter and a group that is a DNS subdomain.
func (o *Options) BindingTargets() ([]schema.GroupKind, error) {
	var errs []error
	gks := make([]schema.GroupKind, 0, len(o.ValueBindingTargets))
	for _, t := range o.ValueBindingTargets {
		gk := schema.ParseGroupKind(strings.TrimSpace(t))
		switch {
		case gk.Kind == "" || !kindName.MatchString(gk.Kind):
			errs = append(errs, fmt.Errorf(`--value-binding-targets: %q is not "Kind" or "Kind.group"`, t))
		case gk.Group != "" && len(validation.IsDNS1123Subdomain(gk.Group)) > 0:
			errs = append(errs, fmt.Errorf("--value-binding-targets: %q: the group is not a DNS subdomain", t))
		default:
			gks = append(gks, gk)
		}
	}
	return gks, errors.Join(errs...)
}

// AdmissionWebhookHostPort returns AdmissionWebhookAddr split into host
// ("" for every address) and port; an error unless it is host:port with a
// port from 1 to 65535.
func (o *Options) AdmissionWebhookHostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(o.AdmissionWebhookAddr)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--admission-webhook-bind-address must be host:port with a port from 1 to 65535, got %q", o.AdmissionWebhookAddr)
	}
	return host, port, nil
}

// Maintenance returns MaintenanceWindow parsed: the zero Window (always
// open) when it is empty, an error naming the fault ("field 2 (hour) ...",
// "duration ...", "time zone ...") when it is not a window maintenance.Parse
// reads.
func (o *Options) Maintenance() (maintenance.Window, error) {
	w, err := maintenance.Parse(o.MaintenanceWindow)
	if err != nil {
		return maintenance.Window{}, fmt.Errorf("--maintenance-window: %w", err)
	}
	return w, nil
}

// kindName is what a Kubernetes kind looks like: CamelCase, a letter first.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Default returns the options with every default set.
func Default() Options {
	return Options{
		QPS:               500,
		Burst:             1000,
		MetricsAddr:       ":9090",
		ProbeAddr:         ":8081",
		PprofAddr:         "0",
		LeaderElectionID:  "nudge.dev",
		DiscoveryInterval: 30 * time.Second,
		KeySecret:         "nudge-fingerprint-key",
		SettingsConfigMap: "nudge-settings",
		RolloutWindow:     5 * time.Second,
		Workers:           16,
		// Wave reads "namespace/name" in its extra-* lists, and nudge reads
		// Wave's annotations as they are (docs/migration.md).
		CrossNamespaceReferences: "allow",
		RolloutTimeout:           10 * time.Minute,
		// 30 an hour, one every 2 minutes: far more than edits of
		// configuration ask for, far fewer than a loop (two writers
		// fighting over a source) makes.
		MaxRolloutsPerHour:   30,
		ProducerReadyTimeout: 2 * time.Minute,
		// The fan-out of one Secret to many bound targets: docs/performance.md.
		ValueBindingWorkers: 64,
		// controller-runtime's default port of a webhook server.
		AdmissionWebhookAddr: ":9443",
		LogFormat:            "text",
		ReloadStrategy:       "annotations",
		LogLevel:             "info",
		EventReasons:         "nudge",
		Reloader:             DefaultReloader(),
	}
}

// BindFlags registers every option on fs, with o's current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path of a kubeconfig file; in-cluster configuration when empty.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the API server.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Reloader's name for --metrics-bind-address.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, `Address of the health probes; "0" disables them.`)
	fs.StringVar(&o.ProbeAddr, "health-addr", o.ProbeAddr, "Reloader's name for --health-probe-bind-address.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, `Address of Go's pprof endpoints for profiling; "0" disables them.`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so several replicas can run (same as --enable-ha).")
	fs.BoolVar(&o.LeaderElect, "enable-ha", o.LeaderElect, "Reloader's name for --leader-elect.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader-election Lease in the system namespace.")
	fs.DurationVar(&o.DiscoveryInterval, "discovery-interval", o.DiscoveryInterval, "How often to look for Argo Rollouts and custom kinds not served yet, when CustomResourceDefinitions cannot be watched (a namespaced install), and to retry a ValueBinding whose target kind is not served.")
	fs.StringVar(&o.CustomKindsFile, "custom-kinds-file", o.CustomKindsFile, "YAML list of custom kinds (apiVersion, kind, templatePath, triggerPath) to handle like the built-in ones.")
	fs.StringVar(&o.SystemNamespace, "system-namespace", o.SystemNamespace, "nudge's own namespace, holding its key Secret and leader-election Lease; when empty $POD_NAMESPACE, else the pod's namespace in a cluster, else the kubeconfig context's.")
	fs.StringVar(&o.KeySecret, "key-secret", o.KeySecret, "Name of the Secret holding the fingerprint key; created at first start.")
	fs.StringVar(&o.SettingsConfigMap, "settings-configmap", o.SettingsConfigMap, `ConfigMap of the system namespace where the leader publishes nudge's version and effective flags (none secret) for kubectl nudge; "" publishes nothing.`)
	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Comma-separated namespaces to watch; all when empty.")
	fs.StringSliceVar(&o.NamespacesToIgnore, "namespaces-to-ignore", o.NamespacesToIgnore, "Comma-separated namespaces never watched.")
	fs.StringVar(&o.Shard, "shard", o.Shard, `Own only the namespaces whose FNV-1a 64 hash falls in a range: "i/N" (the i-th of N equal ranges, from 0) or "0xSTART-0xEND"; caches, lists and watches hold only those (docs/scaling.md).`)
	fs.Var(&selectorValue{dst: &o.NamespaceSelector}, "namespace-selector", `Label selector: only namespaces it matches are watched; repeated or comma-separated terms are ANDed; Reloader's "key:value" and "key=*" too.`)
	fs.Var(&selectorValue{dst: &o.ResourceLabelSelector}, "resource-label-selector", `Label selector: only ConfigMaps and Secrets it matches count; forms as --namespace-selector.`)
	fs.StringSliceVar(&o.ResourcesToIgnore, "resources-to-ignore", o.ResourcesToIgnore, `Source kinds never watched: "configMaps", "secrets".`)
	fs.StringSliceVar(&o.IgnoredWorkloadTypes, "ignored-workload-types", o.IgnoredWorkloadTypes, `Workload kinds never handled: "jobs", "cronjobs", "deployments", "statefulsets", "daemonsets", "rollouts".`)
	fs.BoolVar(&o.AutoReloadAll, "auto-reload-all", o.AutoReloadAll, `Auto mode for every workload unless it sets an auto annotation to "false".`)
	fs.StringVar(&o.ReloadStrategy, "reload-strategy", o.ReloadStrategy, `Trigger: "annotations" (pod-template annotation) or "env-vars" (Reloader's STAKATER_* env var).`)
	fs.BoolVar(&o.ReloadOnCreate, "reload-on-create", o.ReloadOnCreate, "Also roll when a referenced source is created.")
	fs.BoolVar(&o.ReloadOnDelete, "reload-on-delete", o.ReloadOnDelete, "Also roll when a referenced source is deleted, even a required one.")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "POST each change to this URL instead of rolling.")
	fs.BoolVar(&o.RecreateJobs, "recreate-jobs", o.RecreateJobs, "Delete and re-create a Job whose sources changed (Reloader's Job handling).")
	fs.BoolVar(&o.CronJobStartJob, "cronjob-start-job", o.CronJobStartJob, "Also start a Job from a CronJob at once when its sources change (Reloader's CronJob handling).")
	fs.StringVar(&o.CrossNamespaceReferences, "cross-namespace-references", o.CrossNamespaceReferences, `What becomes of a source a workload names in another namespace ("namespace/name"): "allow" counts it, as Wave does; "deny" refuses it (never read, a Warning CrossNamespaceRefused).`)
	fs.DurationVar(&o.RolloutWindow, "rollout-window", o.RolloutWindow, "Changes within this time after a rollout fold into one trailing rollout (annotation nudge.dev/rollout-window may lengthen it).")
	fs.BoolVar(&o.AllowWorkloadOverrides, "allow-workload-overrides", o.AllowWorkloadOverrides, "Let workload and Namespace annotations loosen the flags' limits (a shorter rollout window, a larger or no storm brake, a maintenance window open while the flag's is closed); without it they may only tighten them.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Concurrent reconciles per workload kind.")
	fs.IntVar(&o.MaxConcurrentRollouts, "max-concurrent-rollouts", o.MaxConcurrentRollouts, "At most this many workloads rolled by nudge and not complete yet; others wait, and a failed rollout halts the rest of its change. 0: unlimited.")
	fs.DurationVar(&o.RolloutTimeout, "rollout-timeout", o.RolloutTimeout, "With --max-concurrent-rollouts, a rollout not complete after this long fails and halts the rest of its change; 0: only a Deployment's progress deadline.")
	fs.IntVar(&o.MaxRolloutsPerHour, "max-rollouts-per-hour", o.MaxRolloutsPerHour, "Storm brake: past this many rollouts of one workload in a sliding hour, hold its rollouts until the budget frees (annotation nudge.dev/max-rollouts-per-hour may lower it). 0: no limit.")
	fs.StringVar(&o.MaintenanceWindow, "maintenance-window", o.MaintenanceWindow, `Default maintenance window of every workload, "<cron schedule of 5 fields> <duration> [<IANA time zone>]" ("0 2 * * 1-5 2h Europe/Berlin"; UTC when no zone): rollouts wait until it is open (annotation nudge.dev/maintenance-window on a workload or its Namespace narrows it: all must be open). Empty: none.`)
	fs.DurationVar(&o.ProducerReadyTimeout, "producer-ready-timeout", o.ProducerReadyTimeout, "Wait at most this long for a Secret's producer (an ExternalSecret, a cert-manager Certificate) to be Ready before rolling for its change; 0 turns the gate off.")
	fs.BoolVar(&o.ValueBindings, "value-bindings", o.ValueBindings, "Reconcile ValueBindings (nudge.dev/v1alpha1): keep fields of a resource equal to Secret or ConfigMap keys.")
	fs.StringSliceVar(&o.ValueBindingTargets, "value-binding-targets", o.ValueBindingTargets, `Comma-separated kinds a ValueBinding may write, as "Kind.group" ("Harbor.goharbor.io"; a core kind is plain "Kind"); any other target is refused.`)
	fs.IntVar(&o.ValueBindingWorkers, "value-binding-workers", o.ValueBindingWorkers, "Concurrent reconciles of ValueBindings (applies to their targets).")
	fs.BoolVar(&o.AdmissionWebhook, "admission-webhook", o.AdmissionWebhook, "Serve the mutating admission webhook that puts back nudge's trigger when an owner's update of a workload only drops it (register it with the chart's admissionWebhook values).")
	fs.StringVar(&o.AdmissionWebhookAddr, "admission-webhook-bind-address", o.AdmissionWebhookAddr, "Address (host:port) of the admission webhook server.")
	fs.StringVar(&o.AdmissionWebhookCertDir, "admission-webhook-cert-dir", o.AdmissionWebhookCertDir, "Directory of the admission webhook server's tls.crt and tls.key; when empty <temp dir>/k8s-webhook-server/serving-certs.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "Let the admission webhook and metrics servers speak HTTP/2 over TLS; off, they offer HTTP/1.1 alone (HTTP/2 rapid reset, CVE-2023-44487).")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, `Log format: "text" or "json" (Reloader's JSON lines: level, msg, time).`)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: "+strings.Join(LogLevels, ", ")+".")
	fs.StringVar(&o.EventReasons, "event-reasons", o.EventReasons, `Reasons of a rollout's Events: "nudge" (Rolled) or "reloader" (Reloader's Reloaded and ReloadFail).`)
	o.bindReloaderFlags(fs)
	o.bindEvictionFlags(fs)
}

// Validate returns every problem with o, joined; nil when o is usable.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.validateRunning()...)
	errs = append(errs, o.validatePace()...)
	errs = append(errs, o.validateChoices()...)
	errs = append(errs, o.validateSelection()...)
	errs = append(errs, o.validateEndpoints()...)
	errs = append(errs, o.validateNamespaces()...)
	errs = append(errs, o.validateReloader()...)
	errs = append(errs, o.validateEviction()...)
	return errors.Join(errs...)
}

// validateRunning returns the problems with the client, leader election, shard, key and settings.
func (o *Options) validateRunning() []error {
	var errs []error
	// Not "o.QPS <= 0": NaN (pflag reads "NaN") compares false with everything.
	if !(o.QPS > 0) || o.Burst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.QPS, o.Burst))
	}
	if o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty"))
	}
	if _, err := shard.Parse(o.Shard); err != nil {
		errs = append(errs, err)
	}
	if o.DiscoveryInterval <= 0 {
		errs = append(errs, fmt.Errorf("--discovery-interval must be positive, got %s", o.DiscoveryInterval))
	}
	if o.KeySecret == "" {
		errs = append(errs, errors.New("--key-secret must not be empty"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.SettingsConfigMap); o.SettingsConfigMap != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--settings-configmap: %s", strings.Join(msgs, "; ")))
	}
	return errs
}

// validatePace returns the problems with the rollout window, waves, storm brake, maintenance window and producer gate.
func (o *Options) validatePace() []error {
	var errs []error
	if o.RolloutWindow < 0 {
		errs = append(errs, fmt.Errorf("--rollout-window must not be negative, got %s", o.RolloutWindow))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.Workers))
	}
	if o.MaxConcurrentRollouts < 0 || o.RolloutTimeout < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-rollouts and --rollout-timeout must not be negative, got %d and %s", o.MaxConcurrentRollouts, o.RolloutTimeout))
	}
	if o.MaxRolloutsPerHour < 0 {
		errs = append(errs, fmt.Errorf("--max-rollouts-per-hour must not be negative, got %d", o.MaxRolloutsPerHour))
	}
	if _, err := o.Maintenance(); err != nil {
		errs = append(errs, err)
	}
	if o.ProducerReadyTimeout < 0 {
		errs = append(errs, fmt.Errorf("--producer-ready-timeout must not be negative, got %s", o.ProducerReadyTimeout))
	}
	return errs
}

// validateChoices returns the problems with the workers of bindings, and the flags that take one of a few words.
func (o *Options) validateChoices() []error {
	var errs []error
	if o.ValueBindingWorkers < 1 {
		errs = append(errs, fmt.Errorf("--value-binding-workers must be at least 1, got %d", o.ValueBindingWorkers))
	}
	if o.LogFormat != "text" && o.LogFormat != "json" && o.LogFormat != "" {
		errs = append(errs, fmt.Errorf(`--log-format must be "text" or "json", got %q`, o.LogFormat))
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		errs = append(errs, fmt.Errorf("--log-level must be one of %s, got %q", strings.Join(LogLevels, ", "), o.LogLevel))
	}
	if !slices.Contains(CrossNamespacePolicies, o.CrossNamespaceReferences) {
		errs = append(errs, fmt.Errorf(`--cross-namespace-references must be "allow" or "deny", got %q`, o.CrossNamespaceReferences))
	}
	if !slices.Contains(EventReasonSets, o.EventReasons) {
		errs = append(errs, fmt.Errorf(`--event-reasons must be "nudge" or "reloader", got %q`, o.EventReasons))
	}
	if o.ReloadStrategy != "annotations" && o.ReloadStrategy != "env-vars" {
		errs = append(errs, fmt.Errorf(`--reload-strategy must be "annotations" or "env-vars", got %q`, o.ReloadStrategy))
	}
	return errs
}

// validateSelection returns the problems with the selectors and the kinds ignored.
func (o *Options) validateSelection() []error {
	var errs []error
	for _, sel := range []struct{ flag, value string }{
		{"--namespace-selector", o.NamespaceSelector}, {"--resource-label-selector", o.ResourceLabelSelector},
	} {
		if _, err := labels.Parse(sel.value); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sel.flag, err))
		}
	}
	for _, r := range o.ResourcesToIgnore {
		if !slices.Contains([]string{"configmaps", "secrets"}, strings.ToLower(r)) {
			errs = append(errs, fmt.Errorf(`--resources-to-ignore takes "configMaps" and "secrets", got %q`, r))
		}
	}
	for _, w := range o.IgnoredWorkloadTypes {
		if !slices.Contains(WorkloadTypes, strings.ToLower(w)) {
			errs = append(errs, fmt.Errorf("--ignored-workload-types takes %s, got %q", strings.Join(WorkloadTypes, ", "), w))
		}
	}
	return errs
}

// validateEndpoints returns the problems with the webhook, the admission webhook, alerts and binding targets.
func (o *Options) validateEndpoints() []error {
	var errs []error
	if o.WebhookURL != "" {
		if u, err := url.Parse(o.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("--webhook-url must be an http or https URL"))
		}
	}
	if o.AdmissionWebhook {
		if _, _, err := o.AdmissionWebhookHostPort(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Alert.Enabled {
		if err := o.Alert.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := o.BindingTargets(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validateNamespaces returns the problems with --namespaces.
func (o *Options) validateNamespaces() []error {
	var errs []error
	for _, ns := range o.Namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("--namespaces has an empty entry"))
			break
		}
	}
	return errs
}
