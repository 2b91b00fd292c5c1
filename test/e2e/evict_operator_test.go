package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// keepPods is a small operator: until ctx ends it keeps, for each object of
// kind like in ns, n pods made from its spec.template and controlled by it
// (as an operator's custom resource owns its pods directly), re-creating
// any that is gone. It never reads a pod template change into the pods it
// keeps: only a new pod gets it.
func keepPods(ctx context.Context, t *testing.T, c client.Client, ns string, like *unstructured.Unstructured, n int) {
	go func() {
		for ctx.Err() == nil {
			if err := keepOnce(ctx, c, ns, like, n); err != nil && ctx.Err() == nil {
				t.Logf("the test operator: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func keepOnce(ctx context.Context, c client.Client, ns string, like *unstructured.Unstructured, n int) error {
	owners := &unstructured.UnstructuredList{}
	owners.SetGroupVersionKind(like.GroupVersionKind())
	if err := c.List(ctx, owners, client.InNamespace(ns)); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, o := range owners.Items {
		have := 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == o.GetUID() && p.DeletionTimestamp == nil {
				have++
			}
		}
		tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		var spec corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &spec); err != nil {
			return err
		}
		for ; have < n; have++ {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: o.GetName() + "-", Labels: spec.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(true)}}},
				Spec: spec.Spec}
			if err := c.Create(ctx, pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestEvictRestartsPodsOfACustomResource: the pods an operator's custom
// resource owns directly (here a Knative Service kept by a test operator
// that never updates a running pod) are restarted by eviction after a
// change, each once, for a kind named by --evict-pods-of alone.
func TestEvictRestartsPodsOfACustomResource(t *testing.T) {
	ctx, g, ns := namespace(t)
	c, err := nt.Client(plane.Config())
	g.Expect(err).NotTo(HaveOccurred())
	crd := nt.KnativeServiceCRD(t)
	crd.Spec.Group = ns + ".serving.test" // the test's own: no other test installs it
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	kind := nt.KnativeServiceKind
	kind.APIVersion = crd.Spec.Group + "/v1"
	nt.InstallCRD(t, c, crd)
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	file := nt.CustomKindsFile(t, kind)
	nt.Start(t, plane.Config(), ns, func(o *options.Options) {
		o.EnableEviction, o.RolloutTimeout, o.CustomKindsFile = true, time.Minute, file
		o.EvictPodsOf = []string{"Service." + crd.Spec.Group}
	})
	g.Expect(k8s.Create(ctx, nt.ConfigMap(ns, "app", map[string]string{"a": "hello"}))).To(Succeed())
	svc := nt.KnativeService(ns, "shop", map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app"))
	svc.SetAPIVersion(kind.APIVersion)
	g.Expect(c.Create(ctx, svc)).To(Succeed())
	keepPods(ctx, t, c, ns, svc, 2)
	g.Eventually(pods(ctx, g, ns, "shop")).WithTimeout(time.Minute).Should(HaveLen(2), "the operator's 2 pods running")
	restartsEachOnce(ctx, t, g, svc, "shop", 2)
}
