package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/internal/nudgetest"
)

// kindsNamespace holds the kinds scenario's workloads and their sources.
const kindsNamespace = "bench-kinds"

// The workload kinds of the kinds scenario, as -kinds names them.
const (
	deploymentKind  = "Deployment"
	statefulSetKind = "StatefulSet"
	daemonSetKind   = "DaemonSet"
	cronJobKind     = "CronJob"
	jobKind         = "Job"
	rolloutKind     = "Rollout" // Argo Rollouts'
)

// allKinds lists every kind the kinds scenario can create, in its order.
var allKinds = []string{deploymentKind, statefulSetKind, daemonSetKind, cronJobKind, jobKind, rolloutKind}

// rolloutCRDPath is Argo Rollouts' Rollout CRD, read from its Go module as
// the tests read it (see installCRDs).
const rolloutCRDPath = nudgetest.ArgoRollouts + ":" + nudgetest.RolloutCRDPath

var rolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// kindWatches are the resource and pod-template path of every kind but
// Deployment (which the benchmark's Deployment watch sees).
var kindWatches = map[string]struct {
	gvr      schema.GroupVersionResource
	template []string
}{
	statefulSetKind: {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, []string{"spec", "template"}},
	daemonSetKind:   {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, []string{"spec", "template"}},
	cronJobKind:     {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, []string{"spec", "jobTemplate", "spec", "template"}},
	jobKind:         {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, []string{"spec", "template"}},
	rolloutKind:     {rolloutGVR, []string{"spec", "template"}},
}

// workloadResources are the resources, as the audit log names them, whose
// writes count as workload writes in a phase's writes per rollout: every
// kind the scenarios roll.
var workloadResources = []string{"deployments", "statefulsets", "daemonsets", "cronjobs.batch", "jobs.batch", "rollouts.argoproj.io"}

// kinds creates one workload of each kind of cfg.Kinds, named after its
// kind in lower case, each using a ConfigMap of that name, waits until the
// controller has seen them, changes each ConfigMap in turn (waiting for the
// rollout the change must cause), then waits cfg.Settle and counts each
// workload's rollouts.
func (b *bench) kinds(ctx context.Context) error {
	res := &results.Kinds{Load: results.LoadAvg()}
	b.res.Kinds = res
	for _, k := range b.cfg.Kinds {
		if w, ok := kindWatches[k]; ok {
			if err := b.watcher.WatchKind(ctx, b.watchDyn, w.gvr, kindsNamespace, w.template); err != nil {
				return err
			}
		}
	}
	if err := b.phase("kinds-setup"); err != nil {
		return err
	}
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kindsNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var seen []string
	for _, k := range b.cfg.Kinds {
		name := strings.ToLower(k)
		src := Source{configMapKind, kindsNamespace, name}
		if _, err := b.cs.CoreV1().ConfigMaps(kindsNamespace).Create(ctx, b.changer.data.object(src).(*corev1.ConfigMap), metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := b.createKind(ctx, k, name, Use{Source: src, Way: EnvFrom}); err != nil {
			return fmt.Errorf("creating the %s: %w", k, err)
		}
		if k != jobKind {
			seen = append(seen, kindsNamespace+"/"+name)
		}
	}
	if err := b.awaitSeen(ctx, seen); err != nil {
		return err
	}
	if err := b.phase("kinds"); err != nil {
		return err
	}
	begin := time.Now()
	sentAt := map[string]time.Time{}
	for _, k := range b.cfg.Kinds {
		name := strings.ToLower(k)
		at, _, err := b.changer.Change(ctx, Source{configMapKind, kindsNamespace, name})
		if err != nil {
			return err
		}
		sentAt[k] = at
		if k == jobKind {
			continue
		}
		if _, missing := b.watcher.WaitRolled(ctx, []string{kindsNamespace + "/" + name}, at, b.cfg.ChangeTimeout); len(missing) > 0 {
			logf("Missed: the %s did not roll within %v of its ConfigMap's change", k, b.cfg.ChangeTimeout)
		}
	}
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return err
	}
	rollouts := b.rollouts(begin, time.Now())
	var summary []string
	for _, k := range b.cfg.Kinds {
		kr := results.Kind{Kind: k, Expected: 1}
		if k == jobKind {
			kr.Expected = 0
		}
		key := kindsNamespace + "/" + strings.ToLower(k)
		for _, r := range rollouts {
			if r.Key != key {
				continue
			}
			if kr.Rollouts == 0 {
				kr.LatencyMS = ptrMS(r.At.Sub(sentAt[k]))
			}
			kr.Rollouts++
		}
		res.Kinds = append(res.Kinds, kr)
		summary = append(summary, fmt.Sprintf("%s %d of %d", k, kr.Rollouts, kr.Expected))
	}
	if err := b.perUpdate(len(b.cfg.Kinds), &res.CPUPerUpdate, &res.RequestsPerUpdate); err != nil {
		return err
	}
	logf("Kinds: rollouts (of those expected): %s", strings.Join(summary, ", "))
	return nil
}

// createKind creates the workload of kind named name, in Reloader's auto
// mode, whose pod template uses use: the pod template of the population's
// Deployments.
func (b *bench) createKind(ctx context.Context, kind, name string, use Use) error {
	d := deployment(kindsNamespace, name, []Use{use})
	meta, tmpl := d.ObjectMeta, d.Spec.Template
	opts := metav1.CreateOptions{}
	var err error
	switch kind {
	case deploymentKind:
		_, err = b.cs.AppsV1().Deployments(kindsNamespace).Create(ctx, d, opts)
	case statefulSetKind:
		_, err = b.cs.AppsV1().StatefulSets(kindsNamespace).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: tmpl}}, opts)
	case daemonSetKind:
		_, err = b.cs.AppsV1().DaemonSets(kindsNamespace).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{Selector: d.Spec.Selector, Template: tmpl}}, opts)
	case cronJobKind:
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err = b.cs.BatchV1().CronJobs(kindsNamespace).Create(ctx, &batchv1.CronJob{ObjectMeta: meta,
			Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: ptr.To(true),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}}, opts)
	case jobKind:
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err = b.cs.BatchV1().Jobs(kindsNamespace).Create(ctx, &batchv1.Job{ObjectMeta: meta,
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: tmpl}}, opts)
	case rolloutKind:
		var spec map[string]any
		if spec, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&d.Spec); err != nil {
			return err
		}
		spec["strategy"] = map[string]any{"canary": map[string]any{}}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "spec": spec}}
		u.SetNamespace(kindsNamespace)
		u.SetName(name)
		u.SetLabels(meta.Labels)
		u.SetAnnotations(meta.Annotations)
		_, err = b.dyn.Resource(rolloutGVR).Namespace(kindsNamespace).Create(ctx, u, opts)
	default:
		err = fmt.Errorf("unknown kind %q", kind)
	}
	return err
}

func ptrMS(d time.Duration) *float64 {
	v := stats.MS(d)
	return &v
}
