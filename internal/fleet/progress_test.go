package fleet

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/workload"
)

func TestProgressOf(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	rolled := metav1.ObjectMeta{Generation: 3, Annotations: map[string]string{workload.LastRolloutAnnotation: t0.Format(time.RFC3339Nano)}}
	deployment := func(s appsv1.DeploymentStatus) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: rolled, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: s}
	}
	done := appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	rollout := func(phase, seen string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": phase, "observedGeneration": seen}}}
		u.SetGroupVersionKind(workload.RolloutGVK)
		u.SetGeneration(3)
		u.SetAnnotations(rolled.Annotations)
		return u
	}
	onDelete := appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	partition := func(p int32) appsv1.StatefulSetUpdateStrategy {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(p)}}
	}
	statefulSet := func(u appsv1.StatefulSetUpdateStrategy, s appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: rolled, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4), UpdateStrategy: u}, Status: s}
	}
	dsOnDelete := appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}
	tests := map[string]struct {
		obj       client.Object
		restart   string        // eviction.ProgressAnnotation, when not ""
		now       time.Duration // after t0
		want      Progress
		wantLeft  time.Duration
		wantCause string
	}{
		"a workload nudge never rolled is settled, whatever its status": {
			obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, want: Settled,
		},
		"a Deployment whose controller has not seen the rollout is rolling": {
			obj: deployment(appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
			now: time.Minute, want: Rolling, wantLeft: 9 * time.Minute,
		},
		"a Deployment with an old replica left is rolling": {
			obj:  deployment(appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a Deployment updated, ready and available is complete": {
			obj: deployment(done), want: Settled,
		},
		"a Deployment past its progress deadline failed": {
			obj: deployment(appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}),
			want: Failed, wantCause: "ProgressDeadlineExceeded",
		},
		"a deadline exceeded of an earlier generation is not this rollout's": {
			obj: deployment(appsv1.DeploymentStatus{ObservedGeneration: 2,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a rollout not complete after the timeout failed": {
			obj: deployment(appsv1.DeploymentStatus{ObservedGeneration: 2}), now: 10 * time.Minute,
			want: Failed, wantCause: "not complete within 10m0s",
		},
		"a StatefulSet on its update revision with every replica ready is complete": {
			obj: &appsv1.StatefulSet{ObjectMeta: rolled, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 2, CurrentRevision: "r2", UpdateRevision: "r2"}},
			want: Settled,
		},
		"a StatefulSet between revisions is rolling": {
			obj: &appsv1.StatefulSet{ObjectMeta: rolled, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2"}},
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"an OnDelete StatefulSet whose controller has not seen the rollout is rolling": {
			obj:  statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r1"}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"an OnDelete StatefulSet whose controller observed the rollout is complete, its pods left to the user": {
			obj:  statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2"}),
			want: Settled,
		},
		"an OnDelete StatefulSet observed is never failed by the timeout": {
			obj: statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentRevision: "r1", UpdateRevision: "r2"}),
			now: time.Hour, want: Settled,
		},
		"an OnDelete StatefulSet observed whose pods nudge evicts is rolling until the restart is done, past the timeout too": {
			obj: statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 3}), restart: "since=2026-11-23T10:00:00Z pods=4",
			now: time.Hour, want: Rolling,
		},
		"an OnDelete StatefulSet whose restart halted failed": {
			obj: statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 3}), restart: "since=2026-11-23T10:00:00Z halted=true",
			want: Failed, wantCause: "a replacement pod not Ready within the rollout timeout",
		},
		"a restart whose progress does not read counts for nothing": {
			obj: statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 3}), restart: "halted=true",
			want: Settled,
		},
		"an OnDelete StatefulSet not observed within the timeout failed": {
			obj: statefulSet(onDelete, appsv1.StatefulSetStatus{ObservedGeneration: 2}),
			now: 10 * time.Minute, want: Failed, wantCause: "not complete within 10m0s",
		},
		"a partitioned StatefulSet with the pods from its partition up updated and every replica ready is complete": {
			obj: statefulSet(partition(3), appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 4, UpdatedReplicas: 1,
				CurrentRevision: "r1", UpdateRevision: "r2"}),
			now: time.Hour, want: Settled,
		},
		"a partitioned StatefulSet with a pod from its partition up not updated is rolling": {
			obj: statefulSet(partition(2), appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 4, UpdatedReplicas: 1,
				CurrentRevision: "r1", UpdateRevision: "r2"}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a partitioned StatefulSet with an updated pod not ready is rolling": {
			obj: statefulSet(partition(3), appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 3, UpdatedReplicas: 1,
				CurrentRevision: "r1", UpdateRevision: "r2"}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a partitioned StatefulSet whose controller has not seen the rollout is rolling": {
			obj: statefulSet(partition(3), appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 4, UpdatedReplicas: 1,
				CurrentRevision: "r1", UpdateRevision: "r1"}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a StatefulSet partitioned above its replicas is complete once observed": {
			obj:  statefulSet(partition(9), appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 4, CurrentRevision: "r1", UpdateRevision: "r2"}),
			want: Settled,
		},
		"a StatefulSet of partition 0 is complete on its update revision only": {
			obj: statefulSet(partition(0), appsv1.StatefulSetStatus{ObservedGeneration: 3, ReadyReplicas: 4, UpdatedReplicas: 4,
				CurrentRevision: "r1", UpdateRevision: "r2"}),
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"a DaemonSet updated and available on every node is complete": {
			obj: &appsv1.DaemonSet{ObjectMeta: rolled,
				Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}},
			want: Settled,
		},
		"a DaemonSet with a node not updated is rolling": {
			obj: &appsv1.DaemonSet{ObjectMeta: rolled,
				Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}},
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"an OnDelete DaemonSet whose controller has not seen the rollout is rolling": {
			obj: &appsv1.DaemonSet{ObjectMeta: rolled, Spec: dsOnDelete,
				Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}},
			want: Rolling, wantLeft: 10 * time.Minute,
		},
		"an OnDelete DaemonSet whose controller observed the rollout is complete, its pods left to the user": {
			obj: &appsv1.DaemonSet{ObjectMeta: rolled, Spec: dsOnDelete,
				Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 2, NumberAvailable: 2}},
			now: time.Hour, want: Settled,
		},
		"an Argo Rollout Healthy at its generation is complete": {obj: rollout("Healthy", "3"), want: Settled},
		"an Argo Rollout Healthy at an older generation is rolling": {
			obj: rollout("Healthy", "2"), want: Rolling, wantLeft: 10 * time.Minute,
		},
		"an Argo Rollout progressing is rolling": {obj: rollout("Progressing", "3"), want: Rolling, wantLeft: 10 * time.Minute},
		"a CronJob is complete at once":          {obj: &batchv1.CronJob{ObjectMeta: rolled}, want: Settled},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.restart != "" {
				tc.obj = tc.obj.DeepCopyObject().(client.Object)
				tc.obj.SetAnnotations(map[string]string{workload.LastRolloutAnnotation: t0.Format(time.RFC3339Nano), eviction.ProgressAnnotation: tc.restart})
			}
			p, cause, left := ProgressOf(tc.obj, t0.Add(tc.now), 10*time.Minute)
			g.Expect(p).To(Equal(tc.want), "progress")
			g.Expect(cause).To(Equal(tc.wantCause), "cause")
			g.Expect(left).To(Equal(tc.wantLeft), "left")
		})
	}
}
