package trim

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// TestTrimWorkloadsTrimsCustomKinds: a custom kind's object keeps in the
// cache the metadata nudge reads and the references of its pod template,
// nothing else; an object of a kind without a template keeps its metadata.
func TestTrimWorkloadsTrimsCustomKinds(t *testing.T) {
	knative := workload.CustomKind{APIVersion: "serving.knative.dev/v1", Kind: "Service", TemplatePath: "spec.template"}.Adapter("")
	prometheus := workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"}.Adapter("")
	trim := Workloads(knative, prometheus)
	meta := func() map[string]any {
		return map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "5",
			"labels":        map[string]any{"app": "w", workload.SealLabel: "s"},
			"annotations":   map[string]any{"secret.reloader.stakater.com/reload": "db", lastApplied: "{...}"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}}
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": meta(),
		"spec": map[string]any{
			"traffic": []any{map[string]any{"percent": int64(100)}},
			"template": map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"autoscaling.knative.dev/min-scale": "1"}, "labels": map[string]any{"a": "b"}},
				"spec": map[string]any{"containerConcurrency": int64(10), "containers": []any{map[string]any{
					"image": "app", "args": []any{"--big"},
					"env": []any{map[string]any{"name": "P", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}},
				}}},
			},
		},
		"status": map[string]any{"url": "http://w"},
	}}
	whole := knative.Template(svc)
	g := NewWithT(t)
	_, err := trim(svc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.Object).To(HaveKey("spec"))
	g.Expect(svc.Object["spec"]).To(HaveLen(1), "of the spec only the template")
	g.Expect(svc.Object).NotTo(HaveKey("status"))
	g.Expect(svc.GetLabels()).To(BeNil(), "no label")
	g.Expect(svc.GetSelfLink()).To(Equal(workload.CachedSealMark+"s"), "the seal, moved (workload.Seal)")
	g.Expect(svc.GetAnnotations()).To(Equal(map[string]string{"secret.reloader.stakater.com/reload": "db"}))
	g.Expect(svc.GetManagedFields()).To(BeNil())
	trimmed := knative.Template(svc)
	g.Expect(trimmed).NotTo(BeNil())
	g.Expect(refs.FromPodSpec("ns", &trimmed.Spec)).To(Equal(refs.FromPodSpec("ns", &whole.Spec)))
	g.Expect(refs.FromPodSpec("ns", &trimmed.Spec)).To(HaveLen(1))
	g.Expect(trimmed.Annotations).To(Equal(whole.Annotations), "dialects read template annotations")
	g.Expect(trimmed.Labels).To(BeNil())
	g.Expect(trimmed.Spec.Containers[0].Image).To(BeEmpty())
	again := svc.DeepCopy()
	_, _ = trim(again)
	g.Expect(again).To(Equal(svc), "idempotent")

	prom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": meta(),
		"spec": map[string]any{"replicas": int64(2), "podMetadata": map[string]any{"annotations": map[string]any{"x": "y"}}},
	}}
	_, err = trim(prom)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prom.Object).To(HaveKey("metadata"))
	g.Expect(prom.Object).NotTo(HaveKey("spec"), "nothing of the spec is read")
	g.Expect(prometheus.Template(prom)).NotTo(BeNil(), "an empty template: named sources only")

	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": "Other", "metadata": meta(),
		"spec": map[string]any{"a": "b"}, "status": map[string]any{"c": "d"}}}
	_, _ = trim(other)
	g.Expect(other.Object).To(HaveKey("spec"), "an unlisted kind keeps its spec")
	g.Expect(other.Object).NotTo(HaveKey("status"))
}

// TestTrimWorkloadsKeepsWorkloadRef: a Rollout that takes its pod template
// from a Deployment keeps its spec.workloadRef in the cache, and nothing else
// of its spec.
func TestTrimWorkloadsKeepsWorkloadRef(t *testing.T) {
	g := NewWithT(t)
	ro := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"replicas": int64(3), "restartAt": "2026-11-29T08:00:00Z",
			"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-pods", "scaleDown": "never"}},
		"status": map[string]any{"phase": "Healthy"},
	}}
	_, err := Workloads(workload.Rollout)(ro)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ro.Object["spec"]).To(Equal(map[string]any{"workloadRef": map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-pods", "scaleDown": "never"}}), "of the spec only the workloadRef")
	ref, ok := workload.RefOf(workload.Rollout, ro)
	g.Expect(ok).To(BeTrue())
	g.Expect(ref).To(Equal(workload.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-pods"}))
}

// TestTrimWorkloadKeepsEveryReference: the cache's trimmed pod template
// yields the same references as the whole one.
func TestTrimWorkloadKeepsEveryReference(t *testing.T) {
	g := NewWithT(t)
	cmRef := corev1.LocalObjectReference{Name: "app"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", workload.SealLabel: "s"}}, Spec: appsv1.DeploymentSpec{
		Paused: true, Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "user"}}}}}},
			Containers: []corev1.Container{
				{Name: "side", Image: "s", Args: []string{"--big"}, Env: []corev1.EnvVar{{Name: "PLAIN", Value: "x"},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{Name: "app", Image: "a", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}, {Name: "scratch", MountPath: "/tmp"}}},
			},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Optional: ptr.To(true),
					Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "c"}}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}}}}}},
			},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug"}}}}}}},
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations:  []corev1.Toleration{{Key: "k"}},
		}}}}
	whole := d.Spec.Template.Spec.DeepCopy()
	_, err := Workload(d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Spec.Template.Spec.Containers).To(BeEmpty(), "the spec packed (workload.CachedSpecMark)")
	g.Expect(d.Spec.Template.GetSelfLink()).To(HavePrefix(workload.CachedSpecMark))
	trimmed := &workload.Deployment.Template(d).Spec

	g.Expect(refs.FromPodSpec("ns", trimmed)).To(Equal(refs.FromPodSpec("ns", whole)))
	g.Expect(refs.FromPodSpec("ns", trimmed)).To(HaveLen(5))
	g.Expect(trimmed.Containers).To(HaveExactElements(HaveField("Name", "side"), HaveField("Name", "app")),
		"the first container, and those that read a source, by name")
	for _, r := range refs.FromPodSpec("ns", whole) {
		g.Expect(trimmed.Containers[workload.ContainerFor(trimmed, r.Source)].Name).To(
			Equal(whole.Containers[workload.ContainerFor(whole, r.Source)].Name), "the container that uses %s", r.Source)
	}
	g.Expect(trimmed.Containers[0].Env).To(HaveLen(1), "a key of db, read by an init container only: the first container's")
	g.Expect(trimmed.Containers[0].EnvFrom).To(HaveLen(2), "the whole of extra (no container mounts it) and debug (an ephemeral container's)")
	g.Expect(trimmed.Containers[1].Env).To(HaveLen(1), "a key of tls, mounted by app")
	g.Expect(trimmed.Containers[1].EnvFrom).To(HaveLen(1), "the whole of app")
	g.Expect(trimmed.InitContainers).To(BeNil())
	g.Expect(trimmed.Containers[0].Image).To(BeEmpty(), "images are not kept")
	g.Expect(trimmed.NodeSelector).To(BeNil())
	g.Expect(trimmed.Volumes).To(BeNil(), "volumes' references are in the container")
	g.Expect(d.Labels).To(BeNil(), "no label")
	g.Expect(d.GetSelfLink()).To(Equal(workload.CachedSealMark+"s"), "of the labels only the seal, moved (workload.Seal)")
	g.Expect(d.Spec.Paused).To(BeTrue(), "the pause period reads it")
	g.Expect(d.Spec.Selector).To(BeNil())
	g.Expect(d.Spec.Replicas).To(BeNil())
	g.Expect(d.Spec.Template.Labels).To(BeNil())
	g.Expect(d.Spec.Template.Annotations).To(Equal(map[string]string{"a": "b"}), "dialects read template annotations")

	again := d.DeepCopy()
	_, _ = Workload(again)
	g.Expect(again).To(Equal(d), "idempotent")
}

// TestTrimWorkloadMovesTheSeal: a workload's seal label is kept in its
// selfLink, read by workload.Seal; a selfLink of the API server's is
// cleared, so that a workload without the label has no seal in the cache.
func TestTrimWorkloadMovesTheSeal(t *testing.T) {
	tests := map[string]struct {
		labels   map[string]string
		selfLink string
		seal     string
		sealed   bool
	}{
		"the seal label":                          {labels: map[string]string{"app": "web", workload.SealLabel: "s"}, seal: "s", sealed: true},
		"an empty seal label":                     {labels: map[string]string{workload.SealLabel: ""}, seal: "", sealed: true},
		"the label wins over a selfLink":          {labels: map[string]string{workload.SealLabel: "s"}, selfLink: workload.CachedSealMark + "x", seal: "s", sealed: true},
		"no seal label":                           {labels: map[string]string{"app": "web"}},
		"no seal label, an old server's selfLink": {selfLink: "/apis/apps/v1/namespaces/ns/deployments/web"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: tt.labels}}
			d.SetSelfLink(tt.selfLink)
			_, _ = Workload(d)
			g.Expect(d.Labels).To(BeNil())
			seal, ok := workload.Seal(d)
			g.Expect(ok).To(Equal(tt.sealed))
			g.Expect(seal).To(Equal(tt.seal))
			again := d.DeepCopy()
			_, _ = Workload(again)
			g.Expect(again).To(Equal(d), "idempotent")
		})
	}
}

// TestTrimWorkloadKeepsNamespaceLabels: Workload is the cache's default
// transform, so it also sees Namespaces, whose labels --namespace-selector
// reads.
func TestTrimWorkloadKeepsNamespaceLabels(t *testing.T) {
	g := NewWithT(t)
	labels := map[string]string{"team": "a", workload.SealLabel: "x"}
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: labels}}
	_, err := Workload(ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns.Labels).To(Equal(map[string]string{"team": "a", workload.SealLabel: "x"}))
}

// TestTrimWorkloadKeepsSecretProviderClasses: a Secrets Store CSI volume
// survives the cache's trim as a csi volume naming its class only.
func TestTrimWorkloadKeepsSecretProviderClasses(t *testing.T) {
	g := NewWithT(t)
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "a", VolumeMounts: []corev1.VolumeMount{{Name: "vault", MountPath: "/mnt"}}}},
		Volumes: []corev1.Volume{{Name: "vault", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: refs.CSIDriver, VolumeAttributes: map[string]string{refs.SecretProviderClassAttribute: "vault-db", "other": "x"},
			NodePublishSecretRef: &corev1.LocalObjectReference{Name: "creds"}}}}},
	}
	whole := spec.DeepCopy()
	trimPodSpec(&spec)
	g.Expect(refs.FromPodSpec("shop", &spec)).To(Equal(refs.FromPodSpec("shop", whole)))
	g.Expect(refs.FromPodSpec("shop", &spec)).To(Equal([]refs.Reference{{Source: refs.Source{Kind: refs.SecretProviderClass, Namespace: "shop", Name: "vault-db"}}}))
	g.Expect(spec.Containers).To(Equal([]corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "vault-db"}}}}),
		"the container that mounts it, by name")
	g.Expect(spec.Volumes).To(HaveLen(1))
	g.Expect(spec.Volumes[0].CSI.VolumeAttributes).To(Equal(map[string]string{refs.SecretProviderClassAttribute: "vault-db"}))
	g.Expect(spec.Volumes[0].CSI.NodePublishSecretRef).To(BeNil())
}

// TestKeepProgressKeepsWhatProgressOfReads: the cache (the reconciler's trim
// wrapped by fleet.KeepProgress, as with --max-concurrent-rollouts)'s copy, trimmed, still
// tells a complete rollout from one in flight or failed, holds nothing else of
// the status, and trimming it again changes nothing.
func TestKeepProgressKeepsWhatProgressOfReads(t *testing.T) {
	g := NewWithT(t)
	trim := fleet.KeepProgress(Workloads(workload.Rollout))
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 3, Annotations: map[string]string{workload.LastRolloutAnnotation: time.Now().Format(time.RFC3339Nano)}},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), MinReadySeconds: 5},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 1, CollisionCount: ptr.To[int32](1),
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Message: "long text"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "long text"},
			}},
	}
	out, err := trim(d)
	g.Expect(err).NotTo(HaveOccurred())
	got := out.(*appsv1.Deployment)
	g.Expect(got.Spec.MinReadySeconds).To(BeZero(), "the rest of the spec trimmed")
	g.Expect(got.Status.CollisionCount).To(BeNil(), "the rest of the status trimmed")
	g.Expect(got.Status.Conditions).To(Equal([]appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}))
	p, _, _ := fleet.ProgressOf(got, time.Now(), 0)
	g.Expect(p).To(Equal(fleet.Failed))
	again, _ := trim(got.DeepCopy())
	g.Expect(again).To(Equal(got), "idempotent")

	rolled := metav1.ObjectMeta{Generation: 3, Annotations: d.Annotations}
	sts := &appsv1.StatefulSet{ObjectMeta: rolled,
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4), ServiceName: "db", UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3), MaxUnavailable: ptr.To(intstr.FromInt32(2))}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 1, CurrentReplicas: 3,
			CurrentRevision: "r1", UpdateRevision: "r2"}}
	out, err = trim(sts)
	g.Expect(err).NotTo(HaveOccurred())
	gotSTS := out.(*appsv1.StatefulSet)
	g.Expect(gotSTS.Spec.ServiceName).To(BeEmpty(), "the rest of the StatefulSet's spec trimmed")
	g.Expect(gotSTS.Spec.UpdateStrategy).To(Equal(appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}}), "the strategy's type and partition kept, nothing else")
	g.Expect(gotSTS.Status.CurrentReplicas).To(BeZero(), "the rest of the StatefulSet's status trimmed")
	p, _, _ = fleet.ProgressOf(gotSTS, time.Now(), time.Nanosecond)
	g.Expect(p).To(Equal(fleet.Settled), "a partitioned StatefulSet updated from its partition up is complete")
	again, _ = trim(gotSTS.DeepCopy())
	g.Expect(again).To(Equal(gotSTS), "idempotent")

	ds := &appsv1.DaemonSet{ObjectMeta: rolled,
		Spec:   appsv1.DaemonSetSpec{MinReadySeconds: 5, UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 2, NumberAvailable: 2, NumberReady: 2}}
	out, err = trim(ds)
	g.Expect(err).NotTo(HaveOccurred())
	gotDS := out.(*appsv1.DaemonSet)
	g.Expect(gotDS.Spec.MinReadySeconds).To(BeZero(), "the rest of the DaemonSet's spec trimmed")
	g.Expect(gotDS.Spec.UpdateStrategy).To(Equal(appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}))
	g.Expect(gotDS.Status.NumberReady).To(BeZero(), "the rest of the DaemonSet's status trimmed")
	p, _, _ = fleet.ProgressOf(gotDS, time.Now(), time.Nanosecond)
	g.Expect(p).To(Equal(fleet.Settled), "an OnDelete DaemonSet observed is complete")
	again, _ = trim(gotDS.DeepCopy())
	g.Expect(again).To(Equal(gotDS), "idempotent")

	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)},
		"status": map[string]any{"phase": "Healthy", "observedGeneration": "3", "message": "long"}}}
	u.SetGroupVersionKind(workload.RolloutGVK)
	out, err = trim(u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*unstructured.Unstructured).Object["status"]).To(Equal(map[string]any{"phase": "Healthy", "observedGeneration": "3"}))

	plain, _ := Workloads()(&appsv1.Deployment{Status: d.Status})
	g.Expect(plain.(*appsv1.Deployment).Status).To(BeZero(), "without waves the status is not kept at all")
}
