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

	"nudge.dev/nudge/hack/bench/results"
)

// populate creates every namespace, source and Deployment of the run with
// cfg.Creators parallel workers: namespaces first, then sources, then
// Deployments, so that no Deployment ever names a missing source. Each
// object is made as it is sent, so that a population of millions is never
// held whole in memory.
func populate(ctx context.Context, cs kubernetes.Interface, cfg Config, l Layout, data content) (results.Population, error) {
	begin := time.Now()
	var pop results.Population
	var namespaces []metav1.Object
	for _, ns := range []string{systemNamespace, probeNamespace, fanoutNamespace} {
		if ns == fanoutNamespace && cfg.FanOut == 0 {
			continue
		}
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i := range cfg.Namespaces {
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace(i)}})
	}
	// The sources: each namespace's Secrets, then its ConfigMaps, then the
	// probe's ConfigMap and the fan-out's.
	probe := l.ProbeUse()
	extra := []Source{probe.Source}
	if cfg.FanOut > 0 {
		extra = append(extra, l.FanOutUse(0).Source)
	}
	perNamespace := cfg.Secrets + cfg.ConfigMaps
	populationSources := cfg.Namespaces * perNamespace
	source := func(i int) metav1.Object {
		if i >= populationSources {
			return data.object(extra[i-populationSources])
		}
		ns, j := l.Namespace(i/perNamespace), i%perNamespace
		if j < cfg.Secrets {
			return data.object(Source{secretKind, ns, l.SecretName(j)})
		}
		return data.object(Source{configMapKind, ns, l.ConfigMapName(j - cfg.Secrets)})
	}
	pop.Secrets, pop.ConfigMaps = cfg.Namespaces*cfg.Secrets, cfg.Namespaces*cfg.ConfigMaps
	// The Deployments: the probe, the fan-out's, then the population's.
	deploymentOf := func(i int) metav1.Object {
		switch {
		case i == 0:
			// The probe rolls at every start of a controller, many
			// times an hour over a run: nudge's storm brake must not
			// hold it.
			d := deployment(probeNamespace, probeName, []Use{probe})
			d.Annotations["nudge.dev/max-rollouts-per-hour"] = "0"
			return d
		case i <= cfg.FanOut:
			d := l.FanOutDeployment(i - 1)
			return deployment(d.Namespace, d.Name, []Use{l.FanOutUse(i - 1)})
		}
		g := i - 1 - cfg.FanOut
		d, uses := l.Deployment(g), l.Uses(g)
		return deployment(d.Namespace, d.Name, uses[:])
	}
	pop.Namespaces, pop.Deployments = len(namespaces), 1+cfg.FanOut+cfg.Deployments
	for _, batch := range []struct {
		what string
		n    int
		obj  func(int) metav1.Object
	}{
		{"namespaces", len(namespaces), func(i int) metav1.Object { return namespaces[i] }},
		{"sources", populationSources + len(extra), source},
		{"Deployments", pop.Deployments, deploymentOf},
	} {
		if err := createAll(ctx, cs, cfg.Creators, batch.what, batch.n, batch.obj); err != nil {
			return pop, err
		}
	}
	pop.Seconds = time.Since(begin).Seconds()
	return pop, nil
}

// createAll creates n objects, object i made by obj(i) just before it is
// sent, with workers parallel creators, logging progress every 10 seconds;
// it stops at the first error.
func createAll(ctx context.Context, cs kubernetes.Interface, workers int, what string, n int, obj func(i int) metav1.Object) error {
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
	for i := range n {
		o := obj(i)
		for {
			select {
			case jobs <- o:
				continue feed
			case <-ticker.C:
				d := done.Load()
				logf("Created %d of %d %s (%.0f a second)", d, n, what, float64(d)/time.Since(begin).Seconds())
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
	elapsed := time.Since(begin)
	logf("Created %d %s in %v (%.0f a second)", n, what, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	return nil
}

// createEach creates objs as createAll does.
func createEach(ctx context.Context, cs kubernetes.Interface, workers int, what string, objs []metav1.Object) error {
	return createAll(ctx, cs, workers, what, len(objs), func(i int) metav1.Object { return objs[i] })
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
