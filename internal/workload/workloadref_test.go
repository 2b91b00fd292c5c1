package workload_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/workload"
)

func TestRefOf(t *testing.T) {
	rollout := func(spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(workload.RolloutGVK)
		u.SetNamespace("shop")
		u.SetName("web")
		return u
	}
	knative := workload.CustomKind{APIVersion: "serving.knative.dev/v1", Kind: "Service", TemplatePath: "spec.template"}.Adapter("")
	ref := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-pods"}
	tests := map[string]struct {
		kind workload.Kind
		obj  client.Object
		want *workload.Ref // nil: none
	}{
		"a Rollout's workloadRef, in the Rollout's namespace": {kind: workload.Rollout, obj: rollout(map[string]any{"workloadRef": ref}),
			want: &workload.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web-pods"}},
		"a Rollout with a template refers to none": {kind: workload.Rollout, obj: rollout(map[string]any{"template": map[string]any{}})},
		"a workloadRef without a name is none":     {kind: workload.Rollout, obj: rollout(map[string]any{"workloadRef": map[string]any{"kind": "Deployment"}})},
		"a workloadRef that is no object is none":  {kind: workload.Rollout, obj: rollout(map[string]any{"workloadRef": "web-pods"})},
		"a Deployment refers to none":              {kind: workload.Deployment, obj: &appsv1.Deployment{}},
		"a custom kind refers to none":             {kind: knative, obj: rollout(map[string]any{"workloadRef": ref})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := workload.RefOf(tc.kind, tc.obj)
			g.Expect(ok).To(Equal(tc.want != nil))
			g.Expect(workload.Refers(tc.kind, tc.obj)).To(Equal(ok))
			g.Expect(workload.IsReferrer(tc.kind)).To(Equal(tc.kind == workload.Rollout), "only Rollouts refer")
			if tc.want != nil {
				g.Expect(got).To(Equal(*tc.want))
				g.Expect(got.String()).To(Equal("Deployment shop/web-pods"))
			}
		})
	}
}
