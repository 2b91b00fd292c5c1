package ownership

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/workload"
)

// appliedFields is the FieldsV1 of the applied annotation alone: what
// trim.Workload keeps of the managedFields entry of a manager that wrote a
// state back.
const appliedFields = `{"f:metadata":{"f:annotations":{"f:` + workload.AppliedAnnotation + `":{}}}}`

// appliedKey is the applied annotation's key in a FieldsV1, wherever it is.
var appliedKey = []byte(`"f:` + workload.AppliedAnnotation + `"`)

// WrittenBackBy returns the manager that wrote a state of nudge's back onto
// a workload whose managedFields are entries, or "" when none did.
//
// nudge writes the applied annotation and the seal label together, under
// workload.FieldManager. A GitOps tool that applies a manifest exported from the live
// object (`kubectl get -o yaml`, nudge's keys included) after nudge wrote a
// newer state changes both values, and the API server moves the ownership
// of both to that tool's manager: by an update (kubectl replace, client-side
// apply) as by a forced server-side apply (Argo CD, Flux). A write that
// leaves a value as it was (an update of other fields, an apply of the same
// value, which shares the ownership) moves nothing, and a manifest without
// nudge's keys owns neither. So a workload whose applied annotation has an
// owner, while nudge owns neither it nor the seal label, holds a state
// someone else wrote; when it is sealed, it is a state nudge wrote and then
// replaced, written back. Unlike a memory in the process, the answer
// survives a restart of nudge, and costs no request: the managedFields come
// with every object.
//
// An applied annotation no manager owns (managedFields stripped) is not
// reported: nothing is known. The seal label counts so that a baseline that
// keeps the applied value (`kubectl rollout undo` to a revision whose state
// is again the current one) and writes only the seal is nudge's.
func WrittenBackBy(entries []metav1.ManagedFieldsEntry) string {
	// Most often no other manager names the applied annotation: then none
	// owns it, and no entry need be decoded (each update of a workload
	// decoded nudge's own entry, 3 % of nudge's CPU in a steady stream).
	if !slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return (e.Manager != workload.FieldManager || e.Subresource != "") && bytes.Contains(e.FieldsV1.GetRawBytes(), appliedKey)
	}) {
		return ""
	}
	by, ours := "", false
	for _, e := range entries {
		applied, seal := owns(e)
		if e.Manager == workload.FieldManager && e.Subresource == "" {
			ours = ours || applied || seal
		} else if applied && by == "" {
			by = e.Manager
		}
	}
	if ours {
		return ""
	}
	return by
}

// owns reports whether a managedFields entry owns the applied annotation
// and the seal label. An entry that names neither key anywhere (most: a
// whole spec's owner costs a search, not a decoding) owns neither.
func owns(e metav1.ManagedFieldsEntry) (applied, seal bool) {
	raw := e.FieldsV1.GetRawString()
	if !strings.Contains(raw, `"f:`+workload.AppliedAnnotation+`"`) && !strings.Contains(raw, `"f:`+workload.SealLabel+`"`) {
		return false, false
	}
	var f struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"f:annotations"`
			Labels      map[string]json.RawMessage `json:"f:labels"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal([]byte(raw), &f) != nil {
		return false, false
	}
	_, applied = f.Metadata.Annotations["f:"+workload.AppliedAnnotation]
	_, seal = f.Metadata.Labels["f:"+workload.SealLabel]
	return applied, seal
}

// TrimManagedFields keeps of o's managedFields what WrittenBackBy reads:
// nothing, unless a state was written back, then one entry of the manager
// that wrote it, owning the applied annotation alone. The answer of
// WrittenBackBy is unchanged, and the common case costs no memory.
func TrimManagedFields(o client.Object) {
	entries := o.GetManagedFields()
	if len(entries) == 0 {
		return
	}
	by := ""
	if _, ok := o.GetAnnotations()[workload.AppliedAnnotation]; ok {
		by = WrittenBackBy(entries)
	}
	if by == "" {
		o.SetManagedFields(nil)
		return
	}
	o.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: by, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(appliedFields),
	}})
}
