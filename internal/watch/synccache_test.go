package watch

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/testbed"
)

// TestSyncWaits: the cache's WaitForCacheSync returns true only once every
// informer asked for has synced, and false when its context ends before
// (here: the cache never started).
func TestSyncWaits(t *testing.T) {
	g := NewWithT(t)
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	ctx := t.Context()
	waits := &SyncWaits{}
	newCache := waits.NewCache(cache.New)
	opts := cache.Options{Scheme: scheme.Scheme, NewInformer: waits.NewInformer(toolscache.NewSharedIndexInformer)}

	idle, err := newCache(p.Config(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = idle.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	expiring, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	g.Expect(idle.WaitForCacheSync(expiring)).To(BeFalse(), "a cache not started is not synced when the wait's context ends")

	waits = &SyncWaits{}
	newCache = waits.NewCache(cache.New)
	opts.NewInformer = waits.NewInformer(toolscache.NewSharedIndexInformer)
	c, err := newCache(p.Config(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	var informers []cache.Informer
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &appsv1.Deployment{}} {
		inf, err := c.GetInformer(ctx, obj)
		g.Expect(err).NotTo(HaveOccurred())
		informers = append(informers, inf)
	}
	g.Expect(waits.informers).To(HaveLen(3), "each informer the cache made is kept to be waited for")
	go func() { _ = c.Start(ctx) }()
	synced, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g.Expect(c.WaitForCacheSync(synced)).To(BeTrue(), "the started cache synced")
	for _, inf := range informers {
		g.Expect(inf.HasSynced()).To(BeTrue(), "every informer synced when the wait returned")
	}
}
