package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/apidiscovery"
	"nudge.dev/nudge/internal/refs"
)

// Gate answers, for a Secret, what nudge knows of its producer (Of), from a
// cache of its own that keeps of each producer only what Trim keeps, and
// calls its hook with the Secret a producer writes whenever the answer for
// that Secret may have changed. It watches a producer kind once the API
// serves it (Watch), in one API version. Its methods are safe for
// concurrent use.
//
// Why a cache of full objects trimmed, rather than a metadata-only watch:
// the status is what the gate reads, and a metadata-only informer carries
// none, so each answer would need a request of its own; the informer still
// receives whole objects, but keeps under 1 KB of each (Trim). Why a
// cache of its own: nudge's cache drops the status of every unstructured
// object (its default transform), cannot be given a transform for a kind
// not served when it is made, and waits for every informer it holds
// before the controllers start, while the gate needs none to have synced.
type Gate struct {
	cache      cache.Cache
	reader     client.Reader // the API, to try a kind's list before watching it
	namespaces []string      // the namespaces the cache watches; none for all
	changed    func(refs.Source)

	mu       sync.RWMutex
	watching map[schema.GroupKind]watched
	refused  map[schema.GroupKind]bool // listing them was forbidden
}

// watched is the watch of one producer kind.
type watched struct {
	version  string
	informer cache.Informer
	// next is the preferred version g is moving the watch to, "" for none
	// (see watch).
	next string
}

// New returns a Gate reading through a cache of its own added to mgr (a
// cache needs no leader election: every replica answers), made with opts'
// namespaces, field selector and informers (those nudge's own cache is made
// with: --namespaces, --namespaces-to-ignore, --shard) and Trim as its
// transform; it watches nothing until Watch. changed is called with the
// Secret a producer writes when the producer is created (not for those of
// a watch's first list), when what StatusOf reads of it changes (with both
// Secrets when it starts writing another), and when it is deleted; it runs
// on the informer's goroutine and must not block (an enqueue). It returns
// an error when the cache cannot be made or added.
func New(mgr ctrl.Manager, opts cache.Options, changed func(refs.Source)) (*Gate, error) {
	opts.Scheme, opts.Mapper, opts.HTTPClient = mgr.GetScheme(), mgr.GetRESTMapper(), mgr.GetHTTPClient()
	opts.DefaultTransform = Trim
	// Of only reads what it gets, and a kind not watched must not start an
	// informer by being read.
	opts.DefaultUnsafeDisableDeepCopy = ptr.To(true)
	opts.ReaderFailOnMissingInformer = true
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the producer cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the producer cache: %w", err)
	}
	g := &Gate{cache: c, reader: mgr.GetAPIReader(), changed: changed,
		watching: map[schema.GroupKind]watched{}, refused: map[schema.GroupKind]bool{}}
	for ns := range opts.DefaultNamespaces {
		if ns != cache.AllNamespaces {
			g.namespaces = append(g.namespaces, ns)
		}
	}
	slices.Sort(g.namespaces)
	return g, nil
}

// Watch has g watch each producer kind once the API serves it (see
// apidiscovery.Kinds.When): an ExternalSecret in v1, else in v1beta1 until v1 is
// served; a Certificate in v1. A kind that is not served is waited for
// without a word above info level. A kind nudge may not list (the probe's
// answer is Forbidden: its RBAC) is said so in one log line and never
// watched: its Secrets roll as if they had no producer. It returns the
// first error of discovery or of a watch started at once.
func (g *Gate) Watch(ctx context.Context, s *apidiscovery.Kinds) error {
	for _, k := range kinds {
		for i, v := range k.versions {
			if i > 0 && g.watched(k.GroupKind) {
				break // a preferred version is served, and watched
			}
			gvk := k.WithVersion(v)
			if err := s.When(ctx, gvk, false, func(string) error { return g.watch(ctx, gvk) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// watched says whether g watches kind gk, in any version, or was refused
// its list.
func (g *Gate) watched(gk schema.GroupKind) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.watching[gk]
	return ok || g.refused[gk]
}

// better says whether g is to watch gvk: it was not refused the list of its
// kind, and watches none of it or a version less preferred than gvk (and
// is not moving to gvk already); g.mu is held.
func (g *Gate) better(gvk schema.GroupVersionKind) bool {
	if g.refused[gvk.GroupKind()] {
		return false
	}
	w, ok := g.watching[gvk.GroupKind()]
	if !ok {
		return true
	}
	k, _ := kindOf(gvk.GroupKind())
	rank := func(v string) int {
		if v == "" {
			return len(k.versions)
		}
		return slices.Index(k.versions, v)
	}
	return rank(gvk.Version) < min(rank(w.version), rank(w.next))
}

// watch starts watching the producers of gvk, now served, unless g watches
// them in a preferred version already. It first lists one of them in each
// namespace g watches: refused (Forbidden; RBAC is by resource, so every
// version of the kind is), it logs why and never watches the kind. From a
// less preferred version, it moves to gvk in the background (move). It
// returns the error of that list or of the watch.
func (g *Gate) watch(ctx context.Context, gvk schema.GroupVersionKind) error {
	g.mu.RLock()
	better := g.better(gvk)
	g.mu.RUnlock()
	if !better {
		return nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("kind", gvk.String())
	err := g.probe(ctx, gvk)
	g.mu.Lock()
	defer g.mu.Unlock()
	if apierrors.IsForbidden(err) {
		g.refused[gvk.GroupKind()] = true
		log.Info("Cannot list a producer kind; its Secrets roll without waiting for their producer", "reason", err.Error())
		return nil
	} else if err != nil {
		return fmt.Errorf("listing %s: %w", gvk, err)
	}
	if !g.better(gvk) {
		return nil
	}
	inf, err := g.cache.GetInformer(ctx, object(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				g.notify(obj)
			}
		},
		UpdateFunc: g.updated,
		DeleteFunc: g.notify,
	}); err != nil {
		_ = g.cache.RemoveInformer(ctx, object(gvk))
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	old, had := g.watching[gvk.GroupKind()]
	if !had {
		g.watching[gvk.GroupKind()] = watched{version: gvk.Version, informer: inf}
		log.Info("Started watching producers")
		return nil
	}
	old.next = gvk.Version
	g.watching[gvk.GroupKind()] = old
	go g.move(ctx, gvk, old.version, inf)
	return nil
}

// move makes inf, the new watch of gvk, the one Of reads once it has listed
// them, then stops the watch of the same kind in version old. Until then Of
// reads, and the hook hears, the old watch: a change meanwhile, which the
// new watch lists as it is, is not missed.
func (g *Gate) move(ctx context.Context, gvk schema.GroupVersionKind, old string, inf cache.Informer) {
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	g.mu.Lock()
	g.watching[gvk.GroupKind()] = watched{version: gvk.Version, informer: inf}
	g.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithValues("kind", gvk.String())
	if err := g.cache.RemoveInformer(ctx, object(gvk.GroupKind().WithVersion(old))); err != nil {
		log.Error(err, "Failed to stop watching producers in an older version", "version", old)
	}
	log.Info("Started watching producers", "replaced", old)
}

// probe lists one producer of gvk in each namespace g watches, or in all.
func (g *Gate) probe(ctx context.Context, gvk schema.GroupVersionKind) error {
	namespaces := g.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := g.reader.List(ctx, list, client.InNamespace(ns), client.Limit(1)); err != nil {
			return err
		}
	}
	return nil
}

// object returns an empty object of gvk to watch or read.
func object(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Of returns what g knows of the producer of secret (a Secret, its
// metadata as nudge's Secret cache keeps it: its controller owner
// reference, see Owners, and CertificateNameAnnotation), read from g's
// cache (see StatusOf): not Known when it names none, when its kind is not
// watched or its watch has not listed it yet, or when the producer is not
// in the cache or writes another Secret. It returns the cache's error, but
// for not found.
func (g *Gate) Of(ctx context.Context, secret metav1.Object) (Status, error) {
	ref, ok := RefOf(secret)
	if !ok {
		return Status{}, nil
	}
	g.mu.RLock()
	w, ok := g.watching[ref.GroupKind]
	g.mu.RUnlock()
	if !ok || !w.informer.HasSynced() {
		return Status{}, nil
	}
	u := object(ref.WithVersion(w.version))
	err := g.cache.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	var moved *cache.ErrResourceNotCached // the watch moved to another version meanwhile
	if apierrors.IsNotFound(err) || errors.As(err, &moved) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading %s: %w", ref, err)
	}
	return StatusOf(ref, secret.GetName(), u), nil
}

// updated notifies a producer's change when it changes what StatusOf reads,
// with both Secrets when it moved from one to another.
func (g *Gate) updated(old, obj any) {
	was, ok1 := stateOf(old)
	is, ok2 := stateOf(obj)
	if ok1 && ok2 && was.equal(is) {
		return
	}
	g.notify(obj)
	if ok1 && ok2 && was.target != is.target {
		g.notify(old)
	}
}

// notify calls g's hook with the Secret obj, a producer (or the tombstone of
// one), writes.
func (g *Gate) notify(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := stateOf(obj)
	if !ok || s.target == "" || g.changed == nil {
		return
	}
	g.changed(refs.Source{Kind: refs.Secret, Namespace: obj.(*unstructured.Unstructured).GetNamespace(), Name: s.target})
}

// stateOf reads obj when it is a producer.
func stateOf(obj any) (state, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return state{}, false
	}
	k, ok := kindOf(u.GroupVersionKind().GroupKind())
	if !ok {
		return state{}, false
	}
	return read(u, k), true
}
