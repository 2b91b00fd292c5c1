package apidiscovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var (
	// crdsGVR and apiServicesGVR are what may start serving a kind: a
	// CustomResourceDefinition, or an APIService of an aggregated API.
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Kinds sets kinds up once the API server serves them: at once when
// it does at start, otherwise when a metadata-only watch of
// CustomResourceDefinitions (and, for custom kinds, of APIServices) sees
// one of the kind's group added or changed, after which API discovery is
// asked again. nudge then needs no restart when, say, Argo Rollouts or a
// custom kind is installed after it, and an idle nudge makes no request:
// a request every few seconds costs CPU and memory for nothing
// (docs/performance.md, "The fixed part"). With --namespaces
// (a namespaced install, which makes no cluster-scoped request: a Role
// cannot grant one), or where the watch is forbidden, it asks API
// discovery every interval instead, which needs no RBAC beyond being
// authenticated.
type Kinds struct {
	cfg      *rest.Config
	interval time.Duration
	poll     bool                         // ask every interval, never watch
	add      func(manager.Runnable) error // the manager's Add
	dc       discovery.DiscoveryInterface

	mu      sync.Mutex
	waiting map[schema.GroupVersionKind]waitingKind
	running bool          // run was added to the manager
	kick    chan struct{} // a watch saw a waiting kind's group change
}

// waitingKind is a kind not served yet, with what sets it up.
type waitingKind struct {
	setup func(resource string) error
	// aggregated says the kind may come from an APIService rather than a
	// CRD (a custom kind; Argo Rollouts, the CSI driver's kinds and
	// ValueBindings are CRDs).
	aggregated bool
}

// New returns Kinds that ask the API server of cfg and, when a kind must be
// waited for, add their watch to the manager with add (the manager's Add);
// interval is the period of the poll they fall back to, and poll makes them
// poll from the start (--namespaces). It returns an error when the discovery
// client cannot be made of cfg.
func New(cfg *rest.Config, interval time.Duration, poll bool, add func(manager.Runnable) error) (*Kinds, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	return &Kinds{cfg: cfg, interval: interval, poll: poll, add: add, dc: dc,
		waiting: map[schema.GroupVersionKind]waitingKind{}, kick: make(chan struct{}, 1)}, nil
}

// When calls setup, with the plural resource name gvk is served under, once
// the API server serves gvk: now when it does, else from the manager's
// runnable (see Kinds). aggregated says gvk may be served by an APIService.
// It returns an error when discovery fails now, or setup does; a later
// setup's error is logged and the setup tried again.
func (s *Kinds) When(ctx context.Context, gvk schema.GroupVersionKind, aggregated bool, setup func(resource string) error) error {
	if resource, err := s.served(gvk); err != nil {
		return fmt.Errorf("looking up %s: %w", gvk, err)
	} else if resource != "" {
		return setup(resource)
	}
	ctrl.LoggerFrom(ctx).Info("Waiting for the API server to serve a kind", "kind", gvk.String())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting[gvk] = waitingKind{setup: setup, aggregated: aggregated}
	if s.running {
		return nil
	}
	s.running = true
	return s.add(manager.RunnableFunc(s.run))
}

// served returns the resource gvk is served under, "" for none; a
// subresource (services/status) has the kind too and is skipped.
func (s *Kinds) served(gvk schema.GroupVersionKind) (string, error) {
	list, err := s.dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return r.Name, nil
		}
	}
	return "", nil
}

// settleSteps are the waits between a watch event and discovery serving
// the kind: the API server adds a CRD's kind to discovery a moment after
// it marks it Established, and an APIService's once its service answers.
var settleSteps = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Steps: 8} // 0.25 s … 32 s

// run sets the waiting kinds up as they become served, and returns once
// none waits or ctx ends. It watches CRDs (and APIServices, when a kind
// waiting may be aggregated) and asks discovery after each event of a
// waiting kind's group, then again settleSteps apart until it is served
// (and every interval while a lookup or a setup fails); when it cannot
// watch, it asks every interval.
func (s *Kinds) run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	var watched []string
	err := errors.New("nudge watches its namespaces alone")
	if !s.poll {
		watched, err = s.watch(watchCtx)
	}
	if err != nil {
		log.Info("Cannot watch what serves new kinds; asking API discovery instead", "every", s.interval, "reason", err.Error())
	}
	// No retry until a watch event: the first lists' events come as adds.
	steps := wait.Backoff{}
	for first := true; ; first = false {
		left, failed := s.setUpServed(ctx)
		if left == 0 {
			return nil
		}
		var retry <-chan time.Time
		switch {
		case err != nil:
			retry = time.After(s.interval)
		case steps.Steps > 0:
			retry = time.After(steps.Step())
		case failed:
			retry = time.After(s.interval)
		}
		if first && err == nil {
			log.Info("Watching for kinds to be served", "resources", watched)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
			steps = settleSteps
		case <-retry:
		}
	}
}

// setUpServed sets up each waiting kind now served and forgets it; it
// returns how many still wait, and whether a lookup or a setup failed.
func (s *Kinds) setUpServed(ctx context.Context) (left int, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk, w := range s.waiting {
		log := ctrl.LoggerFrom(ctx).WithValues("kind", gvk.String())
		resource, err := s.served(gvk)
		if err != nil {
			log.V(1).Info("Failed to look up a kind; will retry", "error", err.Error())
			failed = true
			continue
		}
		if resource == "" {
			continue
		}
		if err := w.setup(resource); err != nil {
			log.Error(err, "Failed to start watching a newly served kind; will retry")
			failed = true
			continue
		}
		log.Info("Started watching a newly served kind")
		delete(s.waiting, gvk)
	}
	return len(s.waiting), failed
}

// watch starts a metadata-only watch of CRDs and, when a waiting kind may
// be aggregated, of APIServices, each ending with ctx; an event of a
// waiting kind's group (a CRD is named plural.group, an APIService
// version.group) kicks run. It returns the group resources watched, or an
// error when either cannot be listed (forbidden, above all), having
// started neither.
func (s *Kinds) watch(ctx context.Context) ([]string, error) {
	mc, err := metadata.NewForConfig(s.cfg)
	if err != nil {
		return nil, err
	}
	gvrs := []schema.GroupVersionResource{crdsGVR}
	s.mu.Lock()
	for _, w := range s.waiting {
		if w.aggregated {
			gvrs = append(gvrs, apiServicesGVR)
			break
		}
	}
	s.mu.Unlock()
	var names []string
	for _, gvr := range gvrs {
		if _, err := mc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		names = append(names, gvr.GroupResource().String())
	}
	for _, gvr := range gvrs {
		inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, "", 0, toolscache.Indexers{}, nil).Informer()
		// Of each object only its name is kept: a CRD's annotations may
		// hold all of it (kubectl apply's last-applied-configuration).
		if err := inf.SetTransform(nameOnly); err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    s.changed,
			UpdateFunc: func(_, obj any) { s.changed(obj) },
		}); err != nil {
			return nil, err
		}
		go inf.RunWithContext(ctx)
	}
	return names, nil
}

// changed kicks run when obj is named after a waiting kind's group.
func (s *Kinds) changed(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk := range s.waiting {
		if strings.HasSuffix(m.Name, "."+gvk.Group) {
			select {
			case s.kick <- struct{}{}:
			default:
			}
			return
		}
	}
}

// nameOnly is the watches' transform: an object's name and resourceVersion.
func nameOnly(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, ResourceVersion: m.ResourceVersion}}, nil
}
