// Command applyfloor is the floor of the benchmark's value-binding fan-out:
// the least any controller can do to write one field of N Harbors. It starts
// the benchmark's plane (kube-apiserver and etcd, with the Metadata-level
// audit log), installs the tests' Harbor CRD, creates N Harbors, then
// server-side applies spec.imageChartStorage.s3.accesskey to all of them
// from W goroutines, with no cache, no status, no Event and no rate limit,
// and reports the seconds from the first apply until an informer on Harbors has
// seen the new value in every one. Run it from the repository's root:
//
//	go run ./hack/bench/applyfloor -n 1000 -workers 64
//
// to learn what the machine allows; compare with the bindings scenario's
// fan-out (docs/performance.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/testbed"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	harborGVR = schema.GroupVersionResource{Group: "goharbor.io", Version: "v1beta1", Resource: "harbors"}
)

const namespace = "floor"

func main() {
	n := flag.Int("n", 1000, "Harbors")
	workers := flag.Int("workers", 64, "concurrent applies")
	rounds := flag.Int("rounds", 2, "fan-outs, one after another")
	flag.Parse()
	if err := run(*n, *workers, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "applyfloor:", err)
		os.Exit(1)
	}
}

func run(n, workers, rounds int) error {
	ctx := context.Background()
	plane, err := testbed.Start(ctx, testbed.Options{Mode: testbed.APIServer, AuditLog: true})
	if err != nil {
		return err
	}
	defer plane.Stop(false)
	cfg := plane.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client rate limit
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	data, err := os.ReadFile("internal/binding/testdata/harbor-crd.yaml")
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return err
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := plane.CreateNamespace(ctx, namespace); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err = dyn.Resource(harborGVR).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			break
		} else if time.Now().After(deadline) {
			return err
		}
	}
	harbors := dyn.Resource(harborGVR).Namespace(namespace)
	if err := parallel(n, 32, func(i int) error {
		_, err := harbors.Create(ctx, harbor(i, ""), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	// An informer, not a bare watch: kube-apiserver closes a watch that
	// falls behind, and the informer resumes it.
	var mu sync.Mutex
	want, seen := "", map[string]bool{}
	updated := make(chan struct{}, 1)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	if _, err := factory.ForResource(harborGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			u := obj.(*unstructured.Unstructured)
			v, _, _ := unstructured.NestedString(u.Object, "spec", "imageChartStorage", "s3", "accesskey")
			mu.Lock()
			defer mu.Unlock()
			if v == want && want != "" {
				seen[u.GetName()] = true
				select {
				case updated <- struct{}{}:
				default:
				}
			}
		},
	}); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	for round := range rounds {
		value := fmt.Sprintf("AKIAFLOOR%07d", round)
		mu.Lock()
		want, seen = value, map[string]bool{}
		mu.Unlock()
		begin := time.Now()
		applied := make(chan time.Duration, 1)
		go func() {
			err := parallel(n, workers, func(i int) error {
				_, err := harbors.Apply(ctx, name(i), harbor(i, value), metav1.ApplyOptions{FieldManager: "floor", Force: true})
				return err
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "applyfloor:", err)
			}
			applied <- time.Since(begin)
		}()
		for {
			mu.Lock()
			done := len(seen) == n
			mu.Unlock()
			if done {
				break
			}
			select {
			case <-updated:
			case <-time.After(time.Minute):
				return fmt.Errorf("round %d: not every Harbor got the new value within a minute", round+1)
			}
		}
		fmt.Printf("round %d: %d Harbors hold the new value %.3f s after the first apply (%d workers; the applies returned after %.3f s)\n",
			round+1, n, time.Since(begin).Seconds(), workers, (<-applied).Seconds())
	}
	return nil
}

func name(i int) string { return fmt.Sprintf("h-%04d", i) }

// harbor is Harbor i as the benchmark creates it, or, with a value, the
// apply configuration of its access key alone.
func harbor(i int, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
		"metadata": map[string]any{"name": name(i), "namespace": namespace},
	}}
	if value != "" {
		u.Object["spec"] = map[string]any{"imageChartStorage": map[string]any{"s3": map[string]any{"accesskey": value}}}
		return u
	}
	u.Object["spec"] = map[string]any{
		"externalURL": "https://" + name(i) + ".registry.example", "harborAdminPasswordRef": "admin",
		"imageChartStorage": map[string]any{"s3": map[string]any{
			"bucket": "registry", "region": "eu-west-1", "secretkeyRef": "s3-credentials",
		}},
	}
	return u
}

// parallel calls f(0) … f(n-1) from workers goroutines and returns the
// first error.
func parallel(n, workers int, f func(int) error) error {
	jobs := make(chan int)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return first
}
