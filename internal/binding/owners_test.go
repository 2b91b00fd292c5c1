package binding

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnerOf(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	entry := func(manager string, op metav1.ManagedFieldsOperationType, at time.Duration, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: &metav1.Time{Time: t0.Add(at)},
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const ak = `{"f:spec":{"f:s3":{"f:accesskey":{}}}}`
	const bucket = `{"f:spec":{"f:s3":{"f:bucket":{}}}}`
	const list = `{"f:spec":{"f:list":{}}}`
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	tests := map[string]struct {
		managed []metav1.ManagedFieldsEntry
		path    string
		want    ownership
	}{
		"nudge's apply owns the field": {
			managed: []metav1.ManagedFieldsEntry{entry("argocd-controller", apply, 0, bucket), entry("nudge", apply, time.Second, ak)},
			path:    "spec.s3.accesskey", want: ownership{nudge: true, other: "argocd-controller"},
		},
		"another manager took the field": {
			managed: []metav1.ManagedFieldsEntry{entry("nudge", apply, 0, `{}`), entry("argocd-controller", apply, time.Second, ak)},
			path:    "spec.s3.accesskey", want: ownership{other: "argocd-controller"},
		},
		"an update by nudge's name is not nudge's apply": {
			managed: []metav1.ManagedFieldsEntry{entry("nudge", update, 0, ak)},
			path:    "spec.s3.accesskey", want: ownership{other: "nudge"},
		},
		"nobody owns a removed field: the last writer is named": {
			managed: []metav1.ManagedFieldsEntry{entry("helm", update, 0, bucket), entry("kubectl-edit", update, time.Minute, bucket)},
			path:    "spec.s3.accesskey", want: ownership{other: "kubectl-edit"},
		},
		"a field in a list is owned with the list": {
			managed: []metav1.ManagedFieldsEntry{entry("nudge", apply, 0, list)},
			path:    "spec.list[0].b", want: ownership{nudge: true},
		},
		"a status writer is never named": {
			managed: []metav1.ManagedFieldsEntry{{Manager: "operator", Operation: update, Subresource: "status", Time: &metav1.Time{Time: t0.Add(time.Hour)}}},
			path:    "spec.s3.accesskey", want: ownership{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := ParsePath(tc.path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ownerOf(tc.managed, p)).To(Equal(tc.want))
		})
	}
}
