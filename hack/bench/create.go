package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Population counts what populate created, and how long it took.
type Population struct {
	Namespaces  int     `json:"namespaces"`
	Secrets     int     `json:"secrets"`
	ConfigMaps  int     `json:"configmaps"`
	Deployments int     `json:"deployments"`
	Seconds     float64 `json:"seconds"`
}

// populate creates every namespace, source and Deployment of the run with
// cfg.Creators parallel workers: namespaces first, then sources, then
// Deployments, so that no Deployment ever names a missing source.
func populate(ctx context.Context, cs kubernetes.Interface, cfg Config, l Layout, data content) (Population, error) {
	begin := time.Now()
	var pop Population
	var namespaces, sources, deployments []metav1.Object
	for _, ns := range []string{systemNamespace, probeNamespace, fanoutNamespace} {
		if ns == fanoutNamespace && cfg.FanOut == 0 {
			continue
		}
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i := range cfg.Namespaces {
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(i)}})
		for s := range cfg.Secrets {
			sources = append(sources, data.object(Source{secretKind, l.Namespace(i), l.SecretName(s)}))
		}
		for s := range cfg.ConfigMaps {
			sources = append(sources, data.object(Source{configMapKind, l.Namespace(i), l.ConfigMapName(s)}))
		}
	}
	pop.Secrets, pop.ConfigMaps = cfg.Namespaces*cfg.Secrets, cfg.Namespaces*cfg.ConfigMaps
	probe := l.ProbeUse()
	sources = append(sources, data.object(probe.Source))
	// The probe rolls at every start of a controller, many times an hour
	// over a run: nudge's storm brake must not hold it.
	probeDeployment := deployment(probeNamespace, probeName, []Use{probe})
	probeDeployment.Annotations["nudge.dev/max-rollouts-per-hour"] = "0"
	deployments = append(deployments, probeDeployment)
	if cfg.FanOut > 0 {
		sources = append(sources, data.object(l.FanOutUse(0).Source))
		for i := range cfg.FanOut {
			d := l.FanOutDeployment(i)
			deployments = append(deployments, deployment(d.Namespace, d.Name, []Use{l.FanOutUse(i)}))
		}
	}
	for g := range cfg.Deployments {
		d, uses := l.Deployment(g), l.Uses(g)
		deployments = append(deployments, deployment(d.Namespace, d.Name, uses[:]))
	}
	pop.Namespaces, pop.Deployments = len(namespaces), len(deployments)
	for _, batch := range []struct {
		what string
		objs []metav1.Object
	}{{"namespaces", namespaces}, {"sources", sources}, {"Deployments", deployments}} {
		if err := createAll(ctx, cs, cfg.Creators, batch.what, batch.objs); err != nil {
			return pop, err
		}
	}
	pop.Seconds = time.Since(begin).Seconds()
	return pop, nil
}

// createAll creates objs with workers parallel creators, logging progress
// every 10 seconds; it stops at the first error.
func createAll(ctx context.Context, cs kubernetes.Interface, workers int, what string, objs []metav1.Object) error {
	begin := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan metav1.Object)
	var done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for obj := range jobs {
				if err := createOne(ctx, cs, obj); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
feed:
	for _, obj := range objs {
		for {
			select {
			case jobs <- obj:
				continue feed
			case <-ticker.C:
				logf("Created %d of %d %s", done.Load(), len(objs), what)
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	logf("Created %d %s in %v", len(objs), what, time.Since(begin).Round(time.Millisecond))
	return nil
}

// createOne creates obj, retrying a few times when the API server is
// overloaded; an object that already exists counts as created.
func createOne(ctx context.Context, cs kubernetes.Interface, obj metav1.Object) error {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		opts := metav1.CreateOptions{}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = cs.CoreV1().Namespaces().Create(ctx, o, opts)
		case *corev1.Secret:
			_, err = cs.CoreV1().Secrets(o.Namespace).Create(ctx, o, opts)
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
		case *appsv1.Deployment:
			_, err = cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
		default:
			return fmt.Errorf("cannot create %T", obj)
		}
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
			apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
			continue
		case errors.Is(err, context.Canceled):
			return err
		default:
			return fmt.Errorf("%s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return fmt.Errorf("%s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
}
