package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/admission"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/gctune"
	nudgemetrics "nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/settings"
	"nudge.dev/nudge/internal/shard"
	"nudge.dev/nudge/internal/version"
	"nudge.dev/nudge/internal/watch"
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

// flushTimeout bounds the write of the Events still waiting when nudge
// stops (record.Recorder.Flush): at most the recorder's 1,000, about 2 s at
// its 500 a second, well inside a pod's default 30 s of grace.
const flushTimeout = 5 * time.Second

// Run runs nudge against the API server of cfg until ctx is done, then
// writes the Events its last rollouts still wait with. It returns
// an error when start-up fails (no key, no cache sync) or the manager stops
// with one.
func Run(ctx context.Context, cfg *rest.Config, opts options.Options) error {
	start := gctune.Start()
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
	key, err := fingerprint.LoadKey(ctx, direct, opts.SystemNamespace, opts.KeySecret)
	if err != nil {
		return keyError(opts.SystemNamespace, err)
	}
	warnAccepted(ctx, opts)

	reg := nudgemetrics.ShardRegisterer(metrics.Registry, shardOf(opts))
	mgr, err := newManager(ctx, cfg, opts, scheme, custom, direct, reg)
	if err != nil {
		return err
	}
	if err := publishSettings(mgr, opts, direct); err != nil {
		return err
	}
	if err := admission.Serve(mgr, opts, custom); err != nil {
		return err
	}
	lull, reconciled := &record.Lull{}, &record.Lull{}
	if err := addChecks(ctx, mgr, lull, reconciled, start); err != nil {
		return err
	}
	rs, err := newReconcilers(ctx, cfg, mgr, opts, key, lull, reconciled, reg)
	if err != nil {
		return err
	}
	if err := rs.setupBuiltin(ctx); err != nil {
		return err
	}
	if err := setupServed(ctx, rs, custom, reg); err != nil {
		return err
	}
	if err := startSourceInformers(ctx, mgr, rs.behaviour.IgnoreSources); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Starting nudge", "version", version.Get(), "goVersion", version.GoVersion(), "keyID", key.ID(),
		"systemNamespace", opts.SystemNamespace, "namespaces", opts.Namespaces, "rolloutWindow", opts.RolloutWindow)
	err = mgr.Start(ctx)
	// The controllers have stopped: the Events of their last rollouts,
	// still waiting for a lull, are written now.
	if written, left := rs.recorder.Flush(flushTimeout); written+left > 0 {
		ctrl.LoggerFrom(ctx).Info("Wrote the Events waiting at the stop", "written", written, "notWritten", left)
	}
	return err
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

// newManager returns the manager of nudge's caches (see cacheOptions), each
// informer limited to nudge's shard, counted in nudge_cache_objects
// (registered with reg) and waited for without polling (watch.SyncWaits),
// the source informers fanned out (watch.FanOut); with the admission
// webhook's server when --admission-webhook is set, and leader election as
// opts say. It first announces nudge's shard (announceShard, through
// direct). It returns an error when a metric cannot be registered or the
// manager cannot be made.
func newManager(ctx context.Context, cfg *rest.Config, opts options.Options, scheme *runtime.Scheme, custom []workload.CustomKind, direct client.Reader, reg prometheus.Registerer) (ctrl.Manager, error) {
	caches, err := nudgemetrics.RegisterCacheObjects(ctx, reg, scheme)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	co := cacheOptions(opts, custom)
	waits := &watch.SyncWaits{}
	co.NewInformer = waits.NewInformer(sharded(shardOf(opts), scheme, caches.NewInformer))
	if err := announceShard(ctx, metrics.Registry, direct, opts.SystemNamespace, shardOf(opts)); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	hooks, err := admission.NewServer(opts, tlsOpts(opts))
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 hooks,
		Scheme:                        scheme,
		Cache:                         co,
		NewCache:                      watch.FanOut(waits.NewCache(shard.NewCache(shardOf(opts), caches.NewInformer))),
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr, TLSOpts: tlsOpts(opts)},
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofBindAddress(),
		LeaderElection:                opts.LeaderElect,
		LeaderElectionConfig:          leaderConfig(cfg, opts),
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
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// leaderConfig returns the configuration of the leader election's client,
// nil (cfg's) without leader election: cfg's in protobuf, as the other
// built-in kinds nudge writes. Its Lease client is client-go's generated
// one, which asks for JSON unless told otherwise, and the leader renews
// its Lease every --leader-election-retry-period.
func leaderConfig(cfg *rest.Config, opts options.Options) *rest.Config {
	if !opts.LeaderElect {
		return nil
	}
	lcfg := rest.CopyConfig(cfg)
	lcfg.ContentType = runtime.ContentTypeProtobuf
	lcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return lcfg
}

// publishSettings publishes nudge's settings in the ConfigMap
// --settings-configmap (settings.Publish, through direct) from the leader,
// for kubectl nudge; nothing when it is "". It returns the manager's error
// adding the runnable; a failure to publish is logged, not returned.
func publishSettings(mgr ctrl.Manager, opts options.Options, direct client.Client) error {
	if opts.SettingsConfigMap == "" {
		return nil
	}
	// The leader's alone: every replica has the same settings.
	cm := settings.ConfigMap(opts.SystemNamespace, opts.SettingsConfigMap, version.Get(), opts)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := settings.Publish(ctx, direct, direct, cm); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Could not publish nudge's settings; kubectl nudge will need them as flags")
		}
		return nil
	}))
}

// addChecks adds the liveness check "healthz" and the readiness check
// "synced": every replica serves reads from its caches, so every replica is
// ready once they are synced, the leader or not. Once they are, it tells
// start (see gctune.Starting.Synced: the start's memory handed back once lull,
// the workload writes, and reconciled, the reconciles' ends, are quiet).
// It returns the manager's errors.
func addChecks(ctx context.Context, mgr ctrl.Manager, lull, reconciled *record.Lull, start *gctune.Starting) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
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
	log := ctrl.LoggerFrom(ctx)
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		ok := mgr.GetCache().WaitForCacheSync(ctx)
		synced.Store(ok)
		// The manager's context does not carry nudge's logger.
		start.Synced(ctrl.LoggerInto(ctx, log), ok, lull, reconciled)
		return nil
	}))
}

// everyReplica is a Runnable that runs on every replica, not only the leader.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }
