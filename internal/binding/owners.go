package binding

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ownership is who owns one bound field of a target, from its managedFields.
type ownership struct {
	// nudge: FieldManager owns the field by apply.
	nudge bool
	// other is another manager that owns it, or when nobody does, the one
	// that wrote the target last; "" if there is none.
	other string
}

// ownerOf reads from managed (a target's managedFields) who owns the field
// at p. Ownership is tracked down to the first list on the way: a list in
// most schemas is atomic, owned as a whole.
func ownerOf(managed []metav1.ManagedFieldsEntry, p Path) ownership {
	var fp fieldpath.Path
	for _, seg := range p {
		if seg.Field == "" {
			break
		}
		name := seg.Field
		fp = append(fp, fieldpath.PathElement{FieldName: &name})
	}
	var o ownership
	var last *metav1.ManagedFieldsEntry
	for i, m := range managed {
		if m.Manager != FieldManager && m.Subresource == "" && (last == nil || later(m.Time, last.Time)) {
			last = &managed[i]
		}
		if m.FieldsV1 == nil || m.Subresource != "" {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(m.FieldsV1.GetRawBytes())); err != nil || !set.Has(fp) {
			continue
		}
		if m.Manager == FieldManager && m.Operation == metav1.ManagedFieldsOperationApply {
			o.nudge = true
		} else if o.other == "" {
			o.other = m.Manager
		}
	}
	if o.other == "" && last != nil {
		o.other = last.Manager
	}
	return o
}

func later(a, b *metav1.Time) bool {
	if a == nil {
		return false
	}
	return b == nil || a.After(b.Time)
}
