// Package app wires nudge together: the manager, its caches and indexes, the
// controllers and the metrics.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/binding"
	"nudge.dev/nudge/internal/controller"
	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/heap"
	"nudge.dev/nudge/internal/install"
	"nudge.dev/nudge/internal/jobs"
	nudgemetrics "nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/shard"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/trim"
	"nudge.dev/nudge/internal/version"
	"nudge.dev/nudge/internal/workload"
)

// RESTConfig returns the API client configuration of opts: the kubeconfig
// file when given, else in-cluster or $KUBECONFIG, with opts' QPS and burst.
func RESTConfig(opts options.Options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if opts.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	} else {
		cfg, err = config.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading API client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "nudge"
	return cfg, nil
}

// newScheme returns a scheme of the API groups nudge reads and writes, and
// of no other: each registered type costs memory for the life of the process.
// nudge's own API (ValueBinding) is registered only with --value-bindings.
// Argo Rollouts and custom kinds are read as unstructured objects and need
// no type.
func newScheme(opts options.Options) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	adds := []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, eventsv1.AddToScheme,
	}
	if opts.ValueBindings {
		adds = append(adds, v1alpha1.AddToScheme)
	}
	for _, add := range adds {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run runs nudge against the API server of cfg until ctx is done. It returns
// an error when start-up fails (no key, no cache sync) or the manager stops
// with one.
func Run(ctx context.Context, cfg *rest.Config, opts options.Options) error {
	start := heap.Start()
	defer start.End()
	scheme, err := newScheme(opts)
	if err != nil {
		return err
	}
	custom, err := workload.ReadCustomKinds(opts.CustomKindsFile)
	if err != nil {
		return err
	}

	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}
	if opts.SystemNamespace, err = systemNamespace(opts); err != nil {
		return err
	}
	key, err := LoadKey(ctx, direct, opts.SystemNamespace, opts.KeySecret)
	if err != nil {
		return keyError(opts.SystemNamespace, err)
	}
	warnAccepted(ctx, opts)

	reg := shardRegisterer(metrics.Registry, shardOf(opts))
	caches, err := registerCacheObjects(ctx, reg, scheme)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	co := cacheOptions(opts, custom)
	waits := &syncWaits{}
	co.NewInformer = waits.newInformer(sharded(shardOf(opts), scheme, caches.NewInformer))
	if err := announceShard(ctx, metrics.Registry, direct, opts.SystemNamespace, shardOf(opts)); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	hooks, err := webhookServer(opts)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 hooks,
		Scheme:                        scheme,
		Cache:                         co,
		NewCache:                      fanOut(waits.newCache(shard.NewCache(shardOf(opts), caches.NewInformer))),
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofBindAddress(),
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              shardOf(opts).LeaseName(opts.LeaderElectionID),
		LeaderElectionNamespace:       opts.LeaseNamespace(),
		LeaderElectionReleaseOnCancel: opts.Reloader.ReleaseOnCancel,
		LeaseDuration:                 ptr.To(opts.Reloader.LeaseDuration),
		RenewDeadline:                 ptr.To(opts.Reloader.RenewDeadline),
		RetryPeriod:                   ptr.To(opts.Reloader.RetryPeriod),
		Logger:                        ctrl.LoggerFrom(ctx),
		// Run may be called more than once in a process (tests restart
		// nudge), and controller names are checked process-wide.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		// Argo Rollouts and custom kinds are read as unstructured objects:
		// from the cache too.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if opts.SettingsConfigMap != "" {
		// The leader's alone: every replica has the same settings.
		cm := install.ConfigMap(opts.SystemNamespace, opts.SettingsConfigMap, version.Get(), opts)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if err := install.Publish(ctx, direct, direct, cm); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Could not publish nudge's settings; kubectl nudge will need them as flags")
			}
			return nil
		})); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := addAdmissionWebhook(mgr, opts, custom); err != nil {
		return err
	}
	synced := &atomic.Bool{}
	if err := mgr.AddReadyzCheck("synced", func(*http.Request) error {
		if !synced.Load() {
			return errors.New("caches not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}
	lull, reconciled := &record.Lull{}, &record.Lull{}
	// Every replica serves reads from its caches, so every replica is ready
	// once they are synced, the leader or not.
	if err := mgr.Add(everyReplica(func(ctx context.Context) error {
		ok := mgr.GetCache().WaitForCacheSync(ctx)
		synced.Store(ok)
		start.Synced(ctx, ok, lull, reconciled)
		return nil
	})); err != nil {
		return err
	}
	recorder, err := newRecorder(ctx, cfg, scheme, opts, lull, reg)
	if err != nil {
		return err
	}
	recorder.start(ctx)
	m, err := nudgemetrics.New(reg, opts.MetricsByNamespace)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := registerBuildInfo(reg); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	b := Behaviour(opts)
	if err := addNotifiers(ctx, mgr, opts, &b); err != nil {
		return err
	}
	waves, err := fleet.NewWaves(reg, wavesOf(opts), opts.RolloutTimeout)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	watched := watchedNamespaces(opts, mgr.GetClient())
	csi := &csiWatch{ctx: ctx, mgr: mgr, on: &atomic.Bool{}}
	changes := &sources.Changes{}
	newReconciler := func(k workload.Kind) *controller.Reconciler {
		return &controller.Reconciler{
			CSI:           csi.on,
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			Kind:          k,
			Key:           key,
			Recorder:      recorder,
			Window:        opts.RolloutWindow,
			Changes:       changes,
			Watched:       watched,
			AutoReloadAll: opts.AutoReloadAll,
			Dialect:       dialect.NewParser(opts.Reloader.Annotations),
			Metrics:       m,
			Lull:          lull,
			Reconciled:    reconciled,
			Behaviour:     b,
			Waves:         waves,
		}
	}
	copts := controller.Options{Workers: opts.Workers, IgnoreSources: b.IgnoreSources, NamespaceLabels: opts.NamespaceSelector != ""}
	for _, k := range workload.Builtin() {
		if opts.Ignores(k.Plural()) || (k == workload.Job && !opts.RecreateJobs) {
			continue
		}
		r := newReconciler(k)
		if k == workload.Job {
			r.Jobs = &jobs.Recreator{Client: mgr.GetClient(), Journal: &jobs.Journal{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
				Namespace: opts.SystemNamespace, Name: opts.JobJournalSecret()}}
		}
		if err := csi.setup(ctx, r, copts); err != nil {
			return err
		}
	}
	kinds, err := newServedKinds(mgr.GetConfig(), opts.DiscoveryInterval, len(opts.Namespaces) > 0, mgr.Add)
	if err != nil {
		return err
	}
	if !opts.Ignores(workload.Rollout.Plural()) {
		if err := kinds.when(ctx, workload.RolloutGVK, false, func(string) error {
			return csi.setup(ctx, newReconciler(workload.Rollout), copts)
		}); err != nil {
			return err
		}
	}
	if err := setupCSI(ctx, opts, csi, kinds); err != nil {
		return err
	}
	if opts.ValueBindings {
		// Without its CRD (config/ applied without config/crd) nudge waits
		// for it instead of failing to start.
		if err := kinds.when(ctx, v1alpha1.GroupVersion.WithKind("ValueBinding"), false, func(string) error {
			return setupValueBindings(ctx, mgr, opts, key, recorder, lull, reg)
		}); err != nil {
			return err
		}
	}
	for _, c := range custom {
		if err := kinds.when(ctx, c.GroupVersionKind(), true, func(resource string) error {
			if c.Resource != "" && c.Resource != resource {
				ctrl.LoggerFrom(ctx).Info("Found a custom kind under another resource than configured; RBAC rendered from the configured one does not cover it",
					"kind", c.String(), "configured", c.Resource, "served", resource)
			}
			return csi.setup(ctx, newReconciler(c.Adapter(resource)), copts)
		}); err != nil {
			return err
		}
	}
	if err := startSourceInformers(ctx, mgr, b.IgnoreSources); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Starting nudge", "version", version.Get(), "goVersion", version.GoVersion(), "keyID", key.ID(),
		"systemNamespace", opts.SystemNamespace, "namespaces", opts.Namespaces, "rolloutWindow", opts.RolloutWindow)
	return mgr.Start(ctx)
}

// startSourceInformers asks the manager's cache for the ConfigMap and
// Secret informers before it starts, so that they list at the same time as
// the workload kinds' (which the source indexes asked for). Left to the
// controllers, they would start only once the workload caches had synced,
// and a restart would wait for the two lists one after the other. It adds
// the fan-out's one handler to each (fanOut) before they list, so that its
// buffer need not hold the whole list.
func startSourceInformers(ctx context.Context, mgr ctrl.Manager, ignore map[refs.Kind]bool) error {
	for kind, obj := range map[refs.Kind]client.Object{refs.ConfigMap: &corev1.ConfigMap{}, refs.Secret: &corev1.Secret{}} {
		if ignore[kind] {
			continue
		}
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
	}
	return nil
}

// cacheOptions keeps ConfigMaps and Secrets as per-key digests (never their
// values), their labels only for --resource-label-selector, trims workloads
// (built-in, Argo Rollouts and the custom kinds) to what nudge reads, and
// limits the cache to opts.Namespaces when set.
func cacheOptions(opts options.Options, custom []workload.CustomKind) cache.Options {
	marks := dialect.NewParser(opts.Reloader.Annotations).SourceAnnotations()
	digested := cache.ByObject{Transform: sources.DigestSource(opts.ResourceLabelSelector != "", marks), UnsafeDisableDeepCopy: ptr.To(true)}
	unstructuredKinds := []workload.Kind{workload.Rollout}
	for _, c := range custom {
		unstructuredKinds = append(unstructuredKinds, c.Adapter(""))
	}
	transform := trim.Workloads(unstructuredKinds...)
	if wavesOf(opts) > 0 {
		transform = fleet.KeepProgress(transform)
	}
	co := cache.Options{
		DefaultTransform: transform,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: digested,
			&corev1.Secret{}:    digested,
		},
	}
	if len(opts.Namespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			if !slices.Contains(opts.NamespacesToIgnore, ns) {
				co.DefaultNamespaces[ns] = cache.Config{}
			}
		}
	} else if len(opts.NamespacesToIgnore) > 0 {
		var not []fields.Selector
		for _, ns := range opts.NamespacesToIgnore {
			not = append(not, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		co.DefaultFieldSelector = fields.AndSelectors(not...)
		// Namespaces (read for --namespace-selector) are cluster-scoped:
		// the API server refuses a metadata.namespace selector on them.
		namespaces := &metav1.PartialObjectMetadata{}
		namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		co.ByObject[namespaces] = cache.ByObject{Field: fields.Everything()}
	}
	return co
}

// wavesOf returns --max-concurrent-rollouts, 0 (off) with --webhook-url:
// nudge then rolls nothing.
func wavesOf(opts options.Options) int {
	if opts.WebhookURL != "" {
		return 0
	}
	return opts.MaxConcurrentRollouts
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

// Behaviour maps Reloader's flags onto the reconcilers' behaviour (nudge explain
// reads it from a running install's settings too).
func Behaviour(opts options.Options) controller.Behaviour {
	b := controller.Behaviour{
		EnvVars:         opts.ReloadStrategy == "env-vars",
		ReloadOnCreate:  opts.ReloadOnCreate,
		ReloadOnDelete:  opts.ReloadOnDelete,
		IgnoreSources:   map[refs.Kind]bool{},
		CronJobStartJob: opts.CronJobStartJob,
		ReloaderEvents:  opts.EventReasons == "reloader",
	}
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
	b.Notify = func(r controller.Rolled) {
		sources := make([]string, len(r.Sources))
		for i, src := range r.Sources {
			sources[i] = string(src.Kind) + " " + src.Namespace + "/" + src.Name
		}
		s.Send(alert.Alert{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Sources: sources, Time: r.Time, Halted: r.Halted})
	}
	return nil
}

// everyReplica is a Runnable that runs on every replica, not only the leader.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
