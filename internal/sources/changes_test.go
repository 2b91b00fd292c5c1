package sources

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/refs"
)

// TestChanges: what the recorder remembers of a source, for rule 1.
func TestChanges(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cm := func(rv, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: rv,
			Labels: map[string]string{"rv": rv}}, Data: map[string]string{"a": value}}
	}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}
	update := func(old, new *corev1.ConfigMap) func(p predicate.Funcs) {
		return func(p predicate.Funcs) { p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new}) }
	}
	tests := map[string]struct {
		events  []func(predicate.Funcs)
		version string // the cache's resourceVersion of the source; "" for the last update's
		want    []time.Time
	}{
		"a content change is remembered": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y"))},
			want:   []time.Time{t0.Add(time.Second)},
		},
		"the last two changes are remembered, latest first": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("2", "y"), cm("3", "z")), update(cm("3", "z"), cm("4", "w"))},
			want:   []time.Time{t0.Add(3 * time.Second), t0.Add(2 * time.Second)},
		},
		"the same event offered by every kind's controller is one change": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("1", "x"), cm("2", "y")), update(cm("1", "x"), cm("2", "y"))},
			version: "2",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"a metadata change is no change": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "x"))},
		},
		"a version the recorder has not seen counts as a change now": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y"))},
			version: "3",
			want:    []time.Time{t0.Add(time.Hour), t0.Add(time.Second)},
		},
		"a metadata change's version is noted": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("2", "y"), cm("3", "y"))},
			version: "3",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"a source with no event since the start has no times": {
			version: "7",
		},
		"a creation after the initial list is a change": {
			events:  []func(predicate.Funcs){func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: cm("1", "x")}) }},
			version: "1",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"the initial list brings no change": {
			events:  []func(predicate.Funcs){func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: cm("1", "x"), IsInInitialList: true}) }},
			version: "1",
		},
		"a deleted source is forgotten": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), func(p predicate.Funcs) { p.Delete(event.DeleteEvent{Object: cm("2", "y")}) }},
			version: "2",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			now := t0
			c := &Changes{Now: func() time.Time { now = now.Add(time.Second); return now }}
			version := tt.version
			for _, ev := range tt.events {
				ev(c.Recorder())
			}
			if version == "" {
				version = fmt.Sprint(len(tt.events) + 1)
			}
			g.Expect(c.Times(app, version, t0.Add(time.Hour))).To(Equal(tt.want))
		})
	}
}

// TestNilChanges: a nil Changes passes every event and remembers nothing.
func TestNilChanges(t *testing.T) {
	g := NewWithT(t)
	var c *Changes
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: "1"}}
	new := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: "2"}, Data: map[string]string{"a": "1"}}
	g.Expect(c.Recorder().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})).To(BeTrue())
	g.Expect(c.Times(refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}, "2", time.Now())).To(BeNil())
}
