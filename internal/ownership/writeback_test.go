package ownership

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/workload"
)

// entry is a managedFields entry of manager, owning the fields of the JSON
// object fields (FieldsV1).
func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

const (
	stateFields   = `{"f:metadata":{"f:annotations":{"f:nudge.dev/applied-fingerprint":{},"f:nudge.dev/last-rollout":{}},"f:labels":{"f:nudge.dev/seal":{}}}}`
	sealFields    = `{"f:metadata":{"f:labels":{"f:nudge.dev/seal":{}}}}`
	specFields    = `{"f:metadata":{"f:annotations":{"f:nudge.dev/auto":{}}},"f:spec":{"f:replicas":{}}}`
	trimmedFields = `{"f:metadata":{"f:annotations":{"f:nudge.dev/applied-fingerprint":{}}}}`
)

func TestWrittenBackBy(t *testing.T) {
	tests := map[string]struct {
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		"no managedFields: nothing is known": {},
		"nudge owns its state": {
			entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", specFields), entry(workload.FieldManager, "", stateFields)},
		},
		"another manager owns the state: written back": {
			entries: []metav1.ManagedFieldsEntry{entry("argocd-controller", "", stateFields), entry("kube-controller-manager", "status", `{"f:status":{}}`)},
			want:    "argocd-controller",
		},
		"shared with nudge (an apply of the same value): nudge's": {
			entries: []metav1.ManagedFieldsEntry{entry("kustomize-controller", "", stateFields), entry(workload.FieldManager, "", stateFields)},
		},
		"nudge owns only the seal (a baseline that kept the value): nudge's": {
			entries: []metav1.ManagedFieldsEntry{entry("kubectl-rollout", "", trimmedFields), entry(workload.FieldManager, "", sealFields)},
		},
		"nobody owns the applied annotation: nothing is known": {
			entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", specFields), entry("helm", "", sealFields)},
		},
		"nudge's manager on a subresource is not nudge's write": {
			entries: []metav1.ManagedFieldsEntry{entry("flux", "", stateFields), entry(workload.FieldManager, "status", stateFields)},
			want:    "flux",
		},
		"unreadable fields own nothing": {
			entries: []metav1.ManagedFieldsEntry{entry("flux", "", `{"f:metadata":{"f:nudge.dev/`)},
		},
		"an entry without fields owns nothing": {
			entries: []metav1.ManagedFieldsEntry{{Manager: "flux"}},
		},
		"the first other owner is named": {
			entries: []metav1.ManagedFieldsEntry{entry("a", "", trimmedFields), entry("b", "", stateFields)},
			want:    "a",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(WrittenBackBy(tc.entries)).To(Equal(tc.want))

			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
				Annotations:   map[string]string{workload.AppliedAnnotation: "v1.x"},
				ManagedFields: tc.entries,
			}}
			TrimManagedFields(d)
			g.Expect(WrittenBackBy(d.ManagedFields)).To(Equal(tc.want), "the trimmed object tells the same")
			if tc.want == "" {
				g.Expect(d.ManagedFields).To(BeNil(), "nothing kept when nothing was written back")
			} else {
				g.Expect(d.ManagedFields).To(HaveLen(1), "one entry kept")
			}
			again := d.DeepCopy()
			TrimManagedFields(again)
			g.Expect(again).To(Equal(d), "idempotent")
		})
	}
}

// A workload without an applied state keeps no managedFields, whoever owns
// what.
func TestTrimWithoutStateKeepsNoManagedFields(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("flux", "", stateFields)}}}
	TrimManagedFields(d)
	NewWithT(t).Expect(d.ManagedFields).To(BeNil())
}
