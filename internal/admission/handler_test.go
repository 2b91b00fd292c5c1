package admission

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestHandle(t *testing.T) {
	raw := func(o map[string]any) runtime.RawExtension {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	deployment := metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	rolled, replaced := raw(obj(state, sealed, trigger, "app:1")), raw(obj(manifest, plain, nil, "app:1"))
	tests := map[string]struct {
		req     admissionv1.AdmissionRequest
		patched bool
	}{
		"an owner's replace of a Deployment is patched": {
			req:     admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: deployment, OldObject: rolled, Object: replaced},
			patched: true,
		},
		"a create is admitted as it is": {
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Kind: deployment, Object: replaced},
		},
		"a kind nudge does not roll is admitted as it is": {
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, OldObject: rolled, Object: replaced},
		},
		"an unreadable old object is admitted as it is": {
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: deployment, OldObject: runtime.RawExtension{Raw: []byte("{")}, Object: replaced},
		},
		"an unreadable object is admitted as it is": {
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: deployment, OldObject: rolled, Object: runtime.RawExtension{Raw: []byte("[]")}},
		},
		"an object of another shape is admitted as it is": {
			req: admissionv1.AdmissionRequest{Operation: admissionv1.Update, Kind: deployment,
				OldObject: raw(map[string]any{"spec": map[string]any{"template": "x"}}), Object: raw(map[string]any{"spec": []any{1.0}})},
		},
	}
	h := &Handler{Kinds: Kinds(nil)}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: tc.req})
			g.Expect(resp.Allowed).To(BeTrue(), "never refused")
			if !tc.patched {
				g.Expect(resp.Patches).To(BeEmpty())
				return
			}
			g.Expect(resp.Patches).NotTo(BeEmpty())
			for _, p := range resp.Patches {
				g.Expect(p.Path).To(Or(HavePrefix("/spec/template"), HavePrefix("/metadata/annotations"), HavePrefix("/metadata/labels")), "only the template and nudge's state")
			}
		})
	}
}
