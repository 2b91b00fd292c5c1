// Command floor is the benchmark's floor: the least a reloader can do. It
// watches ConfigMaps and Secrets (keeping a hash of their data, not the
// data), indexes the Deployments in Reloader's auto mode by the sources
// their pod spec names, and on a change of a source's data PATCHes the pod
// template of each Deployment using it. No Event, no first-sight write, no
// rollout window, no client rate limit. Run it with
//
//	go build -o bin/bench-floor ./hack/bench/floor
//	go run ./hack/bench -name floor -controller-cmd 'bin/bench-floor --kubeconfig {kubeconfig}'
//
// to learn what the machine allows; it is not a reloader to use.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // with --pprof-bind-address
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

const (
	autoAnnotation = "reloader.stakater.com/auto"
	hashAnnotation = "floor.bench.nudge.dev/hash"
	sourceIndex    = "source"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	workers := flag.Int("workers", 16, "concurrent PATCHes")
	pprofAddr := flag.String("pprof-bind-address", "", "address of /debug/pprof (\"\": none), as nudge's flag, for the benchmark's {pprof-addr}")
	flag.Parse()
	if *pprofAddr != "" {
		go func() { fmt.Fprintln(os.Stderr, "floor: pprof:", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	if err := run(*kubeconfig, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	deployments := factory.Apps().V1().Deployments().Informer()
	if err := deployments.AddIndexers(cache.Indexers{sourceIndex: sourcesOf}); err != nil {
		return err
	}
	queue := workqueue.NewTyped[types.NamespacedName]()
	defer queue.ShutDown()
	onChange := func(kind string) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(metav1.Object), newObj.(metav1.Object)
			if o.GetAnnotations()[hashAnnotation] == n.GetAnnotations()[hashAnnotation] {
				return
			}
			users, _ := deployments.GetIndexer().ByIndex(sourceIndex, kind+"/"+n.GetNamespace()+"/"+n.GetName())
			for _, u := range users {
				d := u.(*appsv1.Deployment)
				queue.Add(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
			}
		}}
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"ConfigMap": factory.Core().V1().ConfigMaps().Informer(),
		"Secret":    factory.Core().V1().Secrets().Informer(),
	} {
		if err := inf.SetTransform(hashData); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(onChange(kind)); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for range workers {
		go func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				body := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"floor.bench.nudge.dev/restarted-at":%q}}}}}`,
					time.Now().Format(time.RFC3339Nano))
				_, err := cs.AppsV1().Deployments(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
				if err != nil && ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "floor: patching", key, err)
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// hashData replaces a source's data by a hash of it in an annotation. It is
// idempotent: an informer may transform an object twice (client-go's
// watch-list start transforms in its temporary store, then again in the
// FIFO).
func hashData(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok && m.GetAnnotations()[hashAnnotation] != "" {
		return obj, nil
	}
	h := sha256.New()
	var data map[string][]byte
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		data = map[string][]byte{}
		for k, v := range o.Data {
			data[k] = []byte(v)
		}
		for k, v := range o.BinaryData {
			data[k] = v
		}
		o.Data, o.BinaryData = nil, nil
	case *corev1.Secret:
		data = o.Data
		o.Data, o.StringData = nil, nil
	default:
		return obj, nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	m := obj.(metav1.Object)
	m.SetManagedFields(nil)
	m.SetAnnotations(map[string]string{hashAnnotation: hex.EncodeToString(h.Sum(nil))})
	return obj, nil
}

// sourcesOf indexes a Deployment in Reloader's auto mode by "Kind/namespace/name"
// of every ConfigMap and Secret its pod spec names.
func sourcesOf(obj any) ([]string, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d.Annotations[autoAnnotation] != "true" {
		return nil, nil
	}
	spec := d.Spec.Template.Spec
	var keys []string
	add := func(kind, name string) { keys = append(keys, kind+"/"+d.Namespace+"/"+name) }
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("ConfigMap", r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("Secret", r.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			add("ConfigMap", v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add("Secret", v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add("ConfigMap", p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add("Secret", p.Secret.Name)
				}
			}
		}
	}
	return keys, nil
}
