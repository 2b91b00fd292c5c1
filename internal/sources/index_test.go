package sources

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/workload"
)

// TestIndex: what the index finds for a source after a sequence of a
// workload kind's events, and which events its Tracker passes (those that
// change a workload's keys).
func TestIndex(t *testing.T) {
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	deploy := func(name string, annotations map[string]string, cms ...string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations}}
		c := corev1.Container{Name: "app"}
		for _, cm := range cms {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}}})
		}
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		return d
	}
	cm := func(ns, name string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	type step struct {
		old, new client.Object // create: no old; delete: no new
		passes   bool
	}
	tests := map[string]struct {
		steps  []step
		source client.Object
		want   []string // names of the workloads found, in order
	}{
		"a created workload is found by each source it reads": {
			steps:  []step{{new: deploy("web", auto, "a", "b"), passes: true}},
			source: cm("ns", "b"),
			want:   []string{"web"},
		},
		"every workload reading a source is found": {
			steps:  []step{{new: deploy("web", auto, "a"), passes: true}, {new: deploy("api", auto, "a"), passes: true}},
			source: cm("ns", "a"),
			want:   []string{"web", "api"},
		},
		"a source of another namespace finds nothing": {
			steps:  []step{{new: deploy("web", auto, "a"), passes: true}},
			source: cm("other", "a"),
		},
		"a workload no dialect opts in has no keys": {
			steps:  []step{{new: deploy("web", nil, "a"), passes: false}},
			source: cm("ns", "a"),
		},
		"an update that changes no key does not pass": {
			steps: []step{{new: deploy("web", auto, "a"), passes: true},
				{old: deploy("web", auto, "a"), new: deploy("web", map[string]string{"reloader.stakater.com/auto": "true", "x": "y"}, "a")}},
			source: cm("ns", "a"),
			want:   []string{"web"},
		},
		"an update to another source moves the workload": {
			steps: []step{{new: deploy("web", auto, "a"), passes: true}, {new: deploy("api", auto, "a"), passes: true},
				{old: deploy("web", auto, "a"), new: deploy("web", auto, "b"), passes: true}},
			source: cm("ns", "a"),
			want:   []string{"api"},
		},
		"the source a workload starts reading finds it": {
			steps: []step{{new: deploy("web", auto, "a"), passes: true},
				{old: deploy("web", auto, "a"), new: deploy("web", auto, "a", "b"), passes: true}},
			source: cm("ns", "b"),
			want:   []string{"web"},
		},
		"opting out removes every key": {
			steps: []step{{new: deploy("web", auto, "a"), passes: true},
				{old: deploy("web", auto, "a"), new: deploy("web", nil, "a"), passes: true}},
			source: cm("ns", "a"),
		},
		"a deleted workload is found no more": {
			steps:  []step{{new: deploy("web", auto, "a"), passes: true}, {old: deploy("web", auto, "a"), passes: true}},
			source: cm("ns", "a"),
		},
		"a created workload seen twice is found once": {
			steps:  []step{{new: deploy("web", auto, "a"), passes: true}, {new: deploy("web", auto, "a"), passes: true}},
			source: cm("ns", "a"),
			want:   []string{"web"},
		},
		"a name pattern finds every source of its kind and namespace": {
			steps:  []step{{new: deploy("web", map[string]string{"configmap.reloader.stakater.com/reload": "ext-.*"}), passes: true}},
			source: cm("ns", "anything"),
			want:   []string{"web"},
		},
		"a name pattern and a name both find the workload": {
			steps: []step{{new: deploy("web", map[string]string{"configmap.reloader.stakater.com/reload": "ext-.*"}), passes: true},
				{new: deploy("api", auto, "ext-1"), passes: true}},
			source: cm("ns", "ext-1"),
			want:   []string{"api", "web"},
		},
		"an object that stands for no source finds nothing": {
			steps:  []step{{new: deploy("web", auto, "a"), passes: true}},
			source: deploy("a", nil),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			x := NewIndex(workload.Deployment, false, dialect.Parser{}, nil)
			p := x.Tracker()
			for i, s := range tt.steps {
				var passed bool
				switch {
				case s.old == nil:
					passed = p.Create(event.CreateEvent{Object: s.new})
				case s.new == nil:
					passed = p.Delete(event.DeleteEvent{Object: s.old})
				default:
					passed = p.Update(event.UpdateEvent{ObjectOld: s.old, ObjectNew: s.new})
				}
				g.Expect(passed).To(Equal(s.passes), "step %d", i)
			}
			var want []reconcile.Request
			for _, n := range tt.want {
				want = append(want, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: n}})
			}
			g.Expect(x.Workloads(context.Background(), tt.source)).To(Equal(want))
		})
	}
}
