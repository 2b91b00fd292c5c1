package app

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/apidiscovery"
	"nudge.dev/nudge/internal/binding"
	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/jobs"
	nudgemetrics "nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// reconcilers sets up the workload reconcilers, one per kind, on one
// manager: they share the Event recorder, the metrics, the Lulls, the
// behaviour Reloader's flags ask for, the waves of --max-concurrent-rollouts
// and the sources' changes, and are set up through csi, which makes them
// watch the CSI driver's pod statuses once it is on.
type reconcilers struct {
	mgr              ctrl.Manager
	opts             options.Options
	key              fingerprint.Key
	recorder         *record.Recorder
	metrics          *nudgemetrics.Metrics
	lull, reconciled *record.Lull
	behaviour        controller.Behaviour
	waves            *fleet.Waves
	watched          func(context.Context, string) bool
	changes          *sources.Changes
	csi              *csiWatch
	producers        *producerGate // nil with --producer-ready-timeout=0
	copts            controller.Options
	metadata         metadata.Interface // the workload writes' (see controller.Reconciler.Metadata)
}

// newReconcilers makes what the reconcilers share: the Event recorder
// (writing through a client of its own made of cfg, waiting on lull), the
// metrics and nudge_build_info (registered with reg), the notifiers
// (addNotifiers), the waves and the metadata client the workloads are
// written through (cfg's, on the manager's connection). It returns an error
// when the recorder's or the metadata client cannot be made, a metric cannot be registered or a notifier added.
func newReconcilers(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, opts options.Options, key fingerprint.Key, lull, reconciled *record.Lull, reg prometheus.Registerer) (*reconcilers, error) {
	recorder, err := record.NewRecorder(ctx, cfg, mgr.GetScheme(), opts.QPS, opts.Burst, lull, reg)
	if err != nil {
		return nil, err
	}
	recorder.Start(ctx)
	m, err := nudgemetrics.New(reg, opts.MetricsByNamespace)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	if err := nudgemetrics.RegisterBuildInfo(reg); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	b := Behaviour(opts)
	if err := addNotifiers(ctx, mgr, opts, &b); err != nil {
		return nil, err
	}
	waves, err := fleet.NewWaves(reg, wavesOf(opts), opts.RolloutTimeout, key)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	producers, err := newProducerGate(mgr, opts)
	if err != nil {
		return nil, err
	}
	// The manager's connection, as its own metadata client.
	meta, err := metadata.NewForConfigAndClient(metadata.ConfigFor(cfg), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the workloads' metadata client: %w", err)
	}
	return &reconcilers{
		metadata:  meta,
		producers: producers,
		mgr:       mgr, opts: opts, key: key, recorder: recorder, metrics: m, lull: lull, reconciled: reconciled,
		behaviour: b, waves: waves, watched: watchedNamespaces(opts, mgr.GetClient()), changes: &sources.Changes{Clock: opts.Clock},
		csi:   &csiWatch{ctx: ctx, mgr: mgr, on: &atomic.Bool{}},
		copts: controller.Options{Workers: opts.Workers, IgnoreSources: b.IgnoreSources, NamespaceLabels: opts.NamespaceSelector != ""},
	}, nil
}

// newReconciler returns the reconciler of kind k.
func (rs *reconcilers) newReconciler(k workload.Kind) *controller.Reconciler {
	r := &controller.Reconciler{
		CSI:           rs.csi.on,
		Client:        rs.mgr.GetClient(),
		Metadata:      rs.metadata,
		APIReader:     rs.mgr.GetAPIReader(),
		Kind:          k,
		Key:           rs.key,
		Recorder:      rs.recorder,
		Window:        rs.opts.RolloutWindow,
		Changes:       rs.changes,
		Watched:       rs.watched,
		AutoReloadAll: rs.opts.AutoReloadAll,
		Dialect:       Dialect(rs.opts),
		Metrics:       rs.metrics,
		Lull:          rs.lull,
		Reconciled:    rs.reconciled,
		Behaviour:     rs.behaviour,
		Waves:         rs.waves,
		Clock:         rs.opts.Clock,
	}
	if rs.producers != nil {
		r.Producers, r.ProducerTimeout = rs.producers.gate, rs.opts.ProducerReadyTimeout
	}
	if rs.opts.EnableEviction {
		kinds, _ := rs.opts.EvictKinds() // validated with the options
		r.Evicting = &eviction.Restarter{Kinds: kinds, Timeout: rs.opts.RolloutTimeout}
	}
	return r
}

// setup sets the reconciler of k up with the manager.
func (rs *reconcilers) setup(ctx context.Context, k workload.Kind) error {
	r := rs.newReconciler(k)
	if err := rs.csi.setup(ctx, r, rs.copts); err != nil {
		return err
	}
	rs.producers.add(r)
	return nil
}

// setupBuiltin sets up the reconciler of each built-in kind opts do not
// ignore; Jobs' only with --recreate-jobs, which recreates them through
// the Job journal.
func (rs *reconcilers) setupBuiltin(ctx context.Context) error {
	opts := rs.opts
	for _, k := range workload.Builtin() {
		if opts.Ignores(k.Plural()) || (k == workload.Job && !opts.RecreateJobs) {
			continue
		}
		r := rs.newReconciler(k)
		if k == workload.Job {
			r.Jobs = &jobs.Recreator{Client: rs.mgr.GetClient(), Reader: rs.mgr.GetAPIReader(), Journal: &jobs.Journal{Client: rs.mgr.GetClient(), Reader: rs.mgr.GetAPIReader(),
				Namespace: opts.SystemNamespace, Name: opts.JobJournalSecret()}}
		}
		if err := rs.csi.setup(ctx, r, rs.copts); err != nil {
			return err
		}
		rs.producers.add(r)
	}
	return nil
}

// setupServed sets up, each once the API server serves its kind (see
// apidiscovery.Kinds), what needs a kind nudge does not own: the reconciler of
// Argo Rollouts, the watch of the CSI driver's pod statuses
// (--enable-csi-integration), the ValueBinding controller
// (--value-bindings, its metrics registered with reg) and the reconciler of
// each custom kind. It returns the first error of discovery or of a setup
// done at once.
func setupServed(ctx context.Context, rs *reconcilers, custom []workload.CustomKind, reg prometheus.Registerer) error {
	opts := rs.opts
	kinds, err := apidiscovery.New(rs.mgr.GetConfig(), opts.DiscoveryInterval, len(opts.Namespaces) > 0, rs.mgr.Add)
	if err != nil {
		return err
	}
	if !opts.Ignores(workload.Rollout.Plural()) {
		if err := kinds.When(ctx, workload.RolloutGVK, false, func(string) error {
			return rs.setup(ctx, workload.Rollout)
		}); err != nil {
			return err
		}
	}
	if err := setupCSI(ctx, opts, rs.csi, kinds); err != nil {
		return err
	}
	if err := rs.producers.watch(ctx, kinds); err != nil {
		return err
	}
	if opts.ValueBindings {
		// Without its CRD (config/ applied without config/crd) nudge waits
		// for it instead of failing to start.
		if err := kinds.When(ctx, v1alpha1.GroupVersion.WithKind("ValueBinding"), false, func(string) error {
			return setupValueBindings(ctx, rs.mgr, opts, rs.key, rs.recorder, rs.lull, reg)
		}); err != nil {
			return err
		}
	}
	for _, c := range custom {
		if err := kinds.When(ctx, c.GroupVersionKind(), true, func(resource string) error {
			if c.Resource != "" && c.Resource != resource {
				ctrl.LoggerFrom(ctx).Info("Found a custom kind under another resource than configured; RBAC rendered from the configured one does not cover it",
					"kind", c.String(), "configured", c.Resource, "served", resource)
			}
			return rs.setup(ctx, c.Adapter(resource))
		}); err != nil {
			return err
		}
	}
	return nil
}

// setupValueBindings registers the ValueBinding controller (--value-bindings):
// its target cache watches the namespaces nudge's own cache watches, its
// metrics are registered with reg.
func setupValueBindings(ctx context.Context, mgr ctrl.Manager, opts options.Options, key fingerprint.Key, recorder events.EventRecorder, lull *record.Lull, reg prometheus.Registerer) error {
	targets, err := opts.BindingTargets()
	if err != nil {
		return err
	}
	co := cacheOptions(opts, nil)
	co.NewInformer = sharded(shardOf(opts), mgr.GetScheme(), toolscache.NewSharedIndexInformer)
	r := &binding.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Key:               key,
		Recorder:          recorder,
		Targets:           targets,
		TargetCache:       cache.Options{DefaultNamespaces: co.DefaultNamespaces, DefaultFieldSelector: co.DefaultFieldSelector, NewInformer: co.NewInformer},
		DiscoveryInterval: opts.DiscoveryInterval,
		Workers:           opts.ValueBindingWorkers,
		Lull:              lull,
		Metrics:           reg,
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the ValueBinding controller: %w", err)
	}
	return nil
}

// Dialect returns the Parser of the workloads' annotations opts ask for:
// Reloader's annotation names as its flags rename them, and sources named
// in another namespace refused with --cross-namespace-references=deny
// (nudge explain reads it from a running install's settings too).
func Dialect(opts options.Options) dialect.Parser {
	return dialect.NewParser(opts.Reloader.Annotations).WithCrossNamespace(!opts.DenyCrossNamespace())
}

// Behaviour maps Reloader's flags onto the reconcilers' behaviour (nudge explain
// reads it from a running install's settings too).
func Behaviour(opts options.Options) controller.Behaviour {
	b := controller.Behaviour{
		EnvVars: opts.ReloadStrategy == "env-vars",
		Counting: resolve.Counting{
			ReloadOnCreate: opts.ReloadOnCreate,
			ReloadOnDelete: opts.ReloadOnDelete,
			IgnoreSources:  map[refs.Kind]bool{},
		},
		CronJobStartJob: opts.CronJobStartJob,
		ReloaderEvents:  opts.EventReasons == "reloader",
	}
	b.Pace = resolve.Pace{Budget: opts.MaxRolloutsPerHour, NamespaceMarks: len(opts.Namespaces) == 0, Overrides: opts.AllowWorkloadOverrides}
	b.Pace.Maintenance, _ = opts.Maintenance() // checked by Validate
	for _, k := range []refs.Kind{refs.ConfigMap, refs.Secret} {
		b.IgnoreSources[k] = opts.IgnoresSources(string(k))
	}
	if opts.ResourceLabelSelector != "" {
		b.SourceSelector, _ = labels.Parse(opts.ResourceLabelSelector) // checked by Validate
	}
	return b
}

// watchedNamespaces returns whether nudge handles a namespace: in
// --namespaces (when set), not in --namespaces-to-ignore, and matched by
// --namespace-selector (when set; namespaces' labels come from the cache).
func watchedNamespaces(opts options.Options, c client.Reader) func(context.Context, string) bool {
	sel, _ := labels.Parse(opts.NamespaceSelector) // checked by Validate
	return func(ctx context.Context, ns string) bool {
		if (len(opts.Namespaces) > 0 && !slices.Contains(opts.Namespaces, ns)) || slices.Contains(opts.NamespacesToIgnore, ns) {
			return false
		}
		if opts.NamespaceSelector == "" {
			return true
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, m); err != nil {
			return false
		}
		return sel.Matches(labels.Set(m.Labels))
	}
}

// addNotifiers wires Reloader's alerts (opts.Alert) and --webhook-url into b:
// each is an asynchronous sender run by the manager on the leader only, so a
// slow or failing endpoint never holds up a reconcile.
func addNotifiers(ctx context.Context, mgr ctrl.Manager, opts options.Options, b *controller.Behaviour) error {
	log := ctrl.LoggerFrom(ctx)
	var s *alert.Sender
	switch {
	case opts.WebhookURL != "":
		s = alert.NewSender(alert.Config{Enabled: true, Sink: alert.SinkJSON, WebhookURL: opts.WebhookURL,
			Retries: alert.DefaultRetries}, nil, log.WithName("webhook"))
		b.NotifyOnly = true
	case opts.Alert.Enabled:
		s = alert.NewSender(opts.Alert, nil, log.WithName("alert"))
	default:
		return nil
	}
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding the alert sender: %w", err)
	}
	b.Notify = s.Send
	return nil
}
