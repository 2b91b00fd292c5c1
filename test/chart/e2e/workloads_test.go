package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
)

var auto = map[string]string{"reloader.stakater.com/auto": "true"}

// app creates a ConfigMap and a one-replica Deployment, both named name,
// annotated reloader.stakater.com/auto and reading the ConfigMap with
// envFrom, whose pods meet the restricted standard.
func app(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(t.Context(), nt.ConfigMap(ns, name, map[string]string{"GREETING": "hello"}))).To(Succeed())
	g.Expect(k8s.Create(t.Context(), nt.Deployment(ns, name, 1, auto, nt.EnvFrom("ConfigMap", name), restricted))).To(Succeed())
}

// restricted makes a pod template meet the restricted Pod Security Standard.
func restricted(tmpl *corev1.PodTemplateSpec) {
	tmpl.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range tmpl.Spec.Containers {
		tmpl.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

// baselined waits until nudge has recorded the Deployment's applied state.
func baselined(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() string {
		var d appsv1.Deployment
		g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		return d.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of %s/%s", ns, name)
}

// changeConfigMap changes the data of the ConfigMap ns/name.
func changeConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	var cm corev1.ConfigMap
	g := NewWithT(t)
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	cm.Data["GREETING"] = "bonjour"
	g.Expect(k8s.Update(t.Context(), &cm)).To(Succeed())
}

// replicaSets returns a func counting the ReplicaSets of the Deployment
// ns/name.
func replicaSets(t *testing.T, ns, name string) func() int {
	return func() int {
		var list appsv1.ReplicaSetList
		if err := k8s.List(context.WithoutCancel(t.Context()), &list, client.InNamespace(ns), client.MatchingLabels{"app": name}); err != nil {
			t.Errorf("Listing ReplicaSets: %v", err)
		}
		return len(list.Items)
	}
}

// installRolloutCRD installs Argo Rollouts' CRD and waits until it is
// established. The CRD is the plane's, shared by every test: it is removed
// when t ends, so that a test that wants it installed after nudge starts
// finds it absent (they also remove it first: see removeRolloutCRD).
func installRolloutCRD(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { removeRolloutCRD(t) })
	nt.InstallCRD(t, k8s, nt.RolloutCRD(t))
}

// removeRolloutCRD deletes Argo Rollouts' CRD, with every Rollout, and waits
// until API discovery no longer serves argoproj.io/v1alpha1: nudge started
// then must find Argo Rollouts not installed.
func removeRolloutCRD(t *testing.T) {
	t.Helper()
	// Not t.Context(): also run from a cleanup, when it is done.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := client.IgnoreNotFound(k8s.Delete(ctx, nt.RolloutCRD(t))); err != nil {
		t.Fatalf("Deleting the Rollout CRD: %v", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(plane.Config())
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "rollouts.argoproj.io"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		_, err := dc.ServerResourcesForGroupVersion(workload.RolloutGVK.GroupVersion().String())
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("The Rollout CRD still served 60 s after its deletion: %v", err)
	}
}

// rolloutBaselined waits until nudge has recorded the Rollout's applied
// state.
func rolloutBaselined(t *testing.T, rollout *unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() string {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(rollout), rollout)).To(Succeed())
		return rollout.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of the Rollout %s/%s", rollout.GetNamespace(), rollout.GetName())
}

// rolloutRolled waits until nudge has rolled the Rollout's template once.
func rolloutRolled(t *testing.T, rollout *unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() int64 {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(rollout), rollout)).To(Succeed())
		return rollout.GetGeneration()
	}).WithTimeout(30*time.Second).Should(Equal(int64(2)), "the Rollout %s/%s's template rolled", rollout.GetNamespace(), rollout.GetName())
}

// argoRollout returns an Argo Rollout annotated reloader.stakater.com/auto
// that reads the ConfigMap "web" with envFrom.
func argoRollout(ns, name string) *unstructured.Unstructured {
	return nt.Rollout(ns, name, auto, nt.EnvFrom("ConfigMap", "web"), restricted)
}
