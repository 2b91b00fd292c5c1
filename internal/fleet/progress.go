package fleet

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/workload"
)

// Progress is where a workload's last rollout by nudge stands, as its
// workload controller reports it in the workload's status.
type Progress int

// The values of Progress.
const (
	// Settled: nudge never rolled the workload (no nudge.dev/last-rollout),
	// or its rollout is complete.
	Settled Progress = iota
	// Rolling: nudge rolled the workload and the rollout is not complete:
	// it takes one of --max-concurrent-rollouts' slots.
	Rolling
	// Failed: nudge rolled the workload and the rollout failed: a
	// Deployment's Progressing condition is False with reason
	// ProgressDeadlineExceeded, or the rollout is not complete
	// --rollout-timeout after it started.
	Failed
)

// deadlineExceeded is the reason of a Deployment's Progressing condition once
// its progressDeadlineSeconds have passed without progress
// (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#failed-deployment).
const deadlineExceeded = "ProgressDeadlineExceeded"

// ProgressOf returns where obj's last rollout by nudge stands at now, with
// timeout the longest a rollout may take (0 for none), why it failed when it
// did, and how long is left until the timeout while it is Rolling (0 without
// a timeout).
//
// Complete means, as each workload controller says it: a Deployment's
// observedGeneration has caught up and its updated, ready and available
// replicas (and all its replicas) equal the desired count; a StatefulSet's
// updateRevision is its currentRevision with every replica ready; a
// DaemonSet's updated and available pods equal the desired count; an Argo
// Rollout's phase is Healthy. CronJobs, Jobs and custom kinds are complete
// at once. A workload whose controller replaces only some pods, or none, by
// itself is complete once the controller has done what it will do, never
// waiting for pods it leaves to the user (so never Failed by the timeout for
// them): a StatefulSet or DaemonSet with updateStrategy OnDelete once its
// controller has observed the new generation (status.observedGeneration ≥
// metadata.generation); a StatefulSet with a rolling update partition P > 0
// once, as kubectl rollout status says, the generation is observed, every
// replica is ready and at least replicas − P of them are updated (the pods
// of ordinal ≥ P). The cache keeps these fields (KeepProgress). A workload
// whose pods nudge restarts through the Eviction API
// (eviction.ProgressAnnotation) is Rolling until the restart is done, and
// Failed once it halted: a replacement was not Ready within the timeout.
func ProgressOf(obj client.Object, now time.Time, timeout time.Duration) (p Progress, reason string, left time.Duration) {
	at, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[workload.LastRolloutAnnotation])
	if err != nil {
		return Settled, "", 0
	}
	if restart, ok := restartOf(obj); ok {
		// Its pods are evicted one by one (package eviction): in flight
		// until the last replacement is Ready, failed when one was not in
		// time.
		if restart.Halted {
			return Failed, "a replacement pod not Ready within the rollout timeout", 0
		}
		return Rolling, "", 0
	}
	complete, exceeded := progress(obj)
	switch {
	case complete:
		return Settled, "", 0
	case exceeded:
		return Failed, deadlineExceeded, 0
	case timeout > 0 && !now.Before(at.Add(timeout)):
		return Failed, "not complete within " + timeout.String(), 0
	case timeout > 0:
		return Rolling, "", at.Add(timeout).Sub(now)
	}
	return Rolling, "", 0
}

// restartOf returns the progress of the restart of obj's pods through the
// Eviction API; ok is false when none is under way (or its annotation does
// not read: the reconciler warns of it).
func restartOf(obj client.Object) (eviction.Progress, bool) {
	v, found := obj.GetAnnotations()[eviction.ProgressAnnotation]
	if !found {
		return eviction.Progress{}, false
	}
	p, err := eviction.ParseProgress(v)
	return p, err == nil
}

// progress reports whether obj's rollout is complete, and for a Deployment
// whether its progress deadline was exceeded (or its restart halted). A
// restart of its pods under way is not complete.
func progress(obj client.Object) (complete, exceeded bool) {
	if restart, ok := restartOf(obj); ok {
		return false, restart.Halted
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want, s := ptr.Deref(o.Spec.Replicas, 1), o.Status
		caught := s.ObservedGeneration >= o.Generation
		for _, c := range s.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == deadlineExceeded {
				exceeded = caught
			}
		}
		return caught && s.Replicas == want && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want, exceeded
	case *appsv1.StatefulSet:
		want, s := ptr.Deref(o.Spec.Replicas, 1), o.Status
		caught := s.ObservedGeneration >= o.Generation
		switch partition := statefulSetPartition(o); {
		case o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
			return caught, false
		case partition > 0:
			return caught && s.ReadyReplicas == want && s.UpdatedReplicas >= want-partition, false
		}
		return caught && s.UpdateRevision == s.CurrentRevision && s.ReadyReplicas == want, false
	case *appsv1.DaemonSet:
		s := o.Status
		caught := s.ObservedGeneration >= o.Generation
		if o.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
			return caught, false
		}
		return caught && s.UpdatedNumberScheduled == s.DesiredNumberScheduled &&
			s.NumberAvailable == s.DesiredNumberScheduled, false
	case *unstructured.Unstructured:
		if o.GroupVersionKind() != workload.RolloutGVK {
			return true, false
		}
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		seen, found, _ := unstructured.NestedString(o.Object, "status", "observedGeneration")
		return phase == "Healthy" && (!found || seen == strconv.FormatInt(o.GetGeneration(), 10)), false
	}
	return true, false
}

// statefulSetPartition returns the partition of s's rolling update: the
// ordinal below which its controller replaces no pod by itself; 0 without
// one.
func statefulSetPartition(s *appsv1.StatefulSet) int32 {
	if u := s.Spec.UpdateStrategy.RollingUpdate; u != nil {
		return ptr.Deref(u.Partition, 0)
	}
	return 0
}

// KeepProgress wraps trim, the cache's transform of workloads, so that it
// keeps of each workload's spec and status the few fields ProgressOf reads
// (replica counts, observed generation, revisions, the Progressing
// condition's status and reason, a StatefulSet's or DaemonSet's update
// strategy type and a StatefulSet's partition, an Argo Rollout's phase): a
// few dozen bytes per workload. Only --max-concurrent-rollouts needs them. Like trim,
// the result is idempotent.
func KeepProgress(trim toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		var keep func()
		switch o := obj.(type) {
		case *appsv1.Deployment:
			replicas, s := o.Spec.Replicas, o.Status
			kept := appsv1.DeploymentStatus{ObservedGeneration: s.ObservedGeneration, Replicas: s.Replicas,
				UpdatedReplicas: s.UpdatedReplicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas}
			for _, c := range s.Conditions {
				if c.Type == appsv1.DeploymentProgressing {
					kept.Conditions = []appsv1.DeploymentCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
				}
			}
			keep = func() { o.Spec.Replicas, o.Status = replicas, kept }
		case *appsv1.StatefulSet:
			replicas, s := o.Spec.Replicas, o.Status
			strategy := appsv1.StatefulSetUpdateStrategy{Type: o.Spec.UpdateStrategy.Type}
			if u := o.Spec.UpdateStrategy.RollingUpdate; u != nil && u.Partition != nil {
				strategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: u.Partition}
			}
			kept := appsv1.StatefulSetStatus{ObservedGeneration: s.ObservedGeneration, ReadyReplicas: s.ReadyReplicas,
				UpdatedReplicas: s.UpdatedReplicas, CurrentRevision: s.CurrentRevision, UpdateRevision: s.UpdateRevision}
			keep = func() { o.Spec.Replicas, o.Spec.UpdateStrategy, o.Status = replicas, strategy, kept }
		case *appsv1.DaemonSet:
			strategy, s := appsv1.DaemonSetUpdateStrategy{Type: o.Spec.UpdateStrategy.Type}, o.Status
			kept := appsv1.DaemonSetStatus{ObservedGeneration: s.ObservedGeneration, DesiredNumberScheduled: s.DesiredNumberScheduled,
				UpdatedNumberScheduled: s.UpdatedNumberScheduled, NumberAvailable: s.NumberAvailable}
			keep = func() { o.Spec.UpdateStrategy, o.Status = strategy, kept }
		case *unstructured.Unstructured:
			if o.GroupVersionKind() == workload.RolloutGVK {
				phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
				seen, found, _ := unstructured.NestedString(o.Object, "status", "observedGeneration")
				keep = func() {
					_ = unstructured.SetNestedField(o.Object, phase, "status", "phase")
					if found {
						_ = unstructured.SetNestedField(o.Object, seen, "status", "observedGeneration")
					}
				}
			}
		}
		out, err := trim(obj)
		if keep != nil && err == nil {
			keep()
		}
		return out, err
	}
}

// ProgressChanged passes the updates of a workload that change whether its
// rollout is complete or past its progress deadline: with waves on, a slot
// frees (or a failure halts a change) when they do.
func ProgressChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			c0, x0 := progress(e.ObjectOld)
			c1, x1 := progress(e.ObjectNew)
			return c0 != c1 || x0 != x1
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// progressOf is ProgressOf of the rollout nudge sealed on obj, workload key
// (see rolledFor), with the content it rolled to: a rollout whose
// RolledForAnnotation is not nudge's, or not of this nudge.dev/last-rollout,
// is Settled, so that it takes no slot and halts nothing.
func (w *Waves) progressOf(key Key, obj client.Object, now time.Time) (p Progress, reason string, left time.Duration, rolled []sourceDigest) {
	if p, reason, left = ProgressOf(obj, now, w.timeout); p == Settled {
		return Settled, "", 0, nil
	}
	rolled, ok := rolledFor(w.key, key, obj)
	if !ok {
		return Settled, "", 0, nil
	}
	return p, reason, left, rolled
}
