package sources

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/refs"
)

// TestChangesSelected: when the set a label selector matches was seen to
// change: a member created, changed or deleted, a source labelled into or
// out of it; not a change outside it.
func TestChangesSelected(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	dash, shop := map[string]string{"app": "dash"}, map[string]string{"app": "shop"}
	cm := func(ns, name, rv, value string, l map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: l},
			Data: map[string]string{"a": value}}
	}
	create := func(o *corev1.ConfigMap) func(predicate.Funcs) {
		return func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: o}) }
	}
	update := func(old, new *corev1.ConfigMap) func(predicate.Funcs) {
		return func(p predicate.Funcs) { p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new}) }
	}
	del := func(o *corev1.ConfigMap) func(predicate.Funcs) {
		return func(p predicate.Funcs) { p.Delete(event.DeleteEvent{Object: o}) }
	}
	tests := map[string]struct {
		events []func(predicate.Funcs)
		at     time.Duration // after t0; Young/2 when 0
		want   []time.Duration
	}{
		"a member created": {events: []func(predicate.Funcs){create(cm("ns", "a", "1", "x", dash))}, want: []time.Duration{1}},
		"a member changed twice": {
			events: []func(predicate.Funcs){update(cm("ns", "a", "1", "x", dash), cm("ns", "a", "2", "y", dash)),
				update(cm("ns", "a", "2", "y", dash), cm("ns", "a", "3", "z", dash))},
			want: []time.Duration{1, 2},
		},
		"a member deleted": {
			events: []func(predicate.Funcs){update(cm("ns", "a", "1", "x", dash), cm("ns", "a", "2", "y", dash)), del(cm("ns", "a", "3", "y", dash))},
			want:   []time.Duration{2},
		},
		"a source labelled into the set": {
			events: []func(predicate.Funcs){update(cm("ns", "a", "1", "x", shop), cm("ns", "a", "2", "x", dash))}, want: []time.Duration{1}},
		"a source labelled out of the set": {
			events: []func(predicate.Funcs){update(cm("ns", "a", "1", "x", dash), cm("ns", "a", "2", "x", shop))}, want: []time.Duration{1}},
		"a source outside the set changed": {
			events: []func(predicate.Funcs){update(cm("ns", "a", "1", "x", shop), cm("ns", "a", "2", "y", shop)), create(cm("ns", "b", "3", "x", nil))}},
		"a member of another namespace changed": {
			events: []func(predicate.Funcs){update(cm("other", "a", "1", "x", dash), cm("other", "a", "2", "y", dash))}},
		"a change older than Young is forgotten": {
			events: []func(predicate.Funcs){create(cm("ns", "a", "1", "x", dash))}, at: Young + 2*time.Second},
	}
	sel, err := labels.Parse("app=dash")
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := &Changes{Clock: &ticking{now: t0}}
			for _, ev := range tt.events {
				ev(c.Recorder())
			}
			at := tt.at
			if at == 0 {
				at = Young / 2
			}
			var want []time.Time
			for _, s := range tt.want {
				want = append(want, t0.Add(s*time.Second))
			}
			got := c.Selected(refs.ConfigMap, "ns", sel, t0.Add(at))
			slices.SortFunc(got, time.Time.Compare)
			g.Expect(got).To(Equal(want))
		})
	}
	var c *Changes
	NewWithT(t).Expect(c.Selected(refs.ConfigMap, "ns", sel, t0)).To(BeNil(), "a nil Changes remembers nothing")
}
