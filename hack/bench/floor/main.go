// Command floor is the benchmark's floor: the least a reloader can do. It
// watches ConfigMaps and Secrets (keeping a hash of their data, not the
// data), indexes the Deployments in Reloader's auto mode by the sources
// their pod spec names, and on a change of a source's data PATCHes the pod
// template of each Deployment using it. No first-sight write, no rollout
// window, no client rate limit; no Event, unless --events: then one
// events.k8s.io/v1 Event per rollout, what a reloader that tells its users
// of each rollout cannot do without, written as nudge writes its Events:
// off the rollout's path, by a goroutine of its own, once no PATCH has been
// sent for a second (or 5 s after the rollout). Run it with
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
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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
	withEvents := flag.Bool("events", false, "write an events.k8s.io/v1 Event on each Deployment rolled, once the PATCHes pause")
	pprofAddr := flag.String("pprof-bind-address", "", "address of /debug/pprof (\"\": none), as nudge's flag, for the benchmark's {pprof-addr}")
	flag.Parse()
	if *pprofAddr != "" {
		go func() { fmt.Fprintln(os.Stderr, "floor: pprof:", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	if err := run(*kubeconfig, *workers, *withEvents); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, workers int, withEvents bool) error {
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
	rolled := newEvents()
	if withEvents {
		go rolled.write(ctx, cs)
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
				d, err := cs.AppsV1().Deployments(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
				if err != nil && ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "floor: patching", key, err)
				}
				if err == nil && withEvents {
					rolled.add(rolledEvent(d))
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// events holds the Events of rollouts until the PATCHes pause.
type events struct {
	mu      sync.Mutex
	waiting []*eventsv1.Event
	last    time.Time // of the last rollout
}

func newEvents() *events { return &events{} }

// add queues e, the Event of a rollout just written.
func (q *events) add(e *eventsv1.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, e)
	q.last = time.Now()
}

// write writes the queued Events until ctx is done, each once no rollout
// has been written for eventsQuiet, or eventsMaxDelay after the oldest
// waiting was queued (nudge's record.Recorder waits alike).
func (q *events) write(ctx context.Context, cs kubernetes.Interface) {
	const eventsQuiet, eventsMaxDelay = time.Second, 5 * time.Second
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		q.mu.Lock()
		var ready []*eventsv1.Event
		if len(q.waiting) > 0 && (time.Since(q.last) >= eventsQuiet || time.Since(q.waiting[0].EventTime.Time) >= eventsMaxDelay) {
			ready, q.waiting = q.waiting, nil
		}
		q.mu.Unlock()
		for _, e := range ready {
			if _, err := cs.EventsV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "floor: recording the rollout of", e.Regarding.Namespace+"/"+e.Regarding.Name, err)
			}
		}
	}
}

// rolledEvent returns the Event of d's rollout, as a reloader records it:
// a Normal Event about d, named after it, at now.
func rolledEvent(d *appsv1.Deployment) *eventsv1.Event {
	now := time.Now()
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: d.Namespace, Name: fmt.Sprintf("%s.%x", d.Name, now.UnixNano())},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "floor.bench.nudge.dev",
		ReportingInstance:   "floor",
		Action:              "Roll",
		Reason:              "Rolled",
		Regarding:           corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID, ResourceVersion: d.ResourceVersion},
		Note:                "Rolled: a source changed",
		Type:                corev1.EventTypeNormal,
	}
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
