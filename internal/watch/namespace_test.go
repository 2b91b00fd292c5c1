package watch

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestAnnotationChanged(t *testing.T) {
	ns := func(annotations, labels map[string]string) *metav1.PartialObjectMetadata {
		o := Namespace()
		o.Name, o.Annotations, o.Labels = "shop", annotations, labels
		return o
	}
	const key = "nudge.dev/paused"
	tests := map[string]struct {
		old, new *metav1.PartialObjectMetadata
		want     bool
	}{
		"the annotation set":              {old: ns(nil, nil), new: ns(map[string]string{key: "true"}, nil), want: true},
		"the annotation removed":          {old: ns(map[string]string{key: "true"}, nil), new: ns(nil, nil), want: true},
		"the annotation rewritten":        {old: ns(map[string]string{key: "true"}, nil), new: ns(map[string]string{key: "false"}, nil), want: true},
		"the annotation set empty":        {old: ns(nil, nil), new: ns(map[string]string{key: ""}, nil), want: true},
		"another annotation changed":      {old: ns(map[string]string{key: "true"}, nil), new: ns(map[string]string{key: "true", "note": "x"}, nil)},
		"a label changed":                 {old: ns(nil, nil), new: ns(nil, map[string]string{"team": "a"})},
		"the annotation written the same": {old: ns(map[string]string{key: "true"}, nil), new: ns(map[string]string{key: "true"}, nil)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(AnnotationChanged(key).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})).To(Equal(tc.want))
		})
	}
	t.Run("creates, deletes and generic events pass nothing", func(t *testing.T) {
		g := NewWithT(t)
		p := AnnotationChanged(key)
		o := ns(map[string]string{key: "true"}, nil)
		g.Expect(p.Create(event.CreateEvent{Object: o})).To(BeFalse())
		g.Expect(p.Delete(event.DeleteEvent{Object: o})).To(BeFalse())
		g.Expect(p.Generic(event.GenericEvent{Object: o})).To(BeFalse())
	})
}
