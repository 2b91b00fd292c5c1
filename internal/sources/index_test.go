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
	dash := map[string]string{"nudge.dev/configmap-selector": "app=dash"}
	labelled := func(obj client.Object, l map[string]string) client.Object {
		obj.SetLabels(l)
		return obj
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
		"a label selector finds a source of its namespace it matches": {
			steps:  []step{{new: deploy("web", dash), passes: true}, {new: deploy("api", auto, "a"), passes: true}},
			source: labelled(cm("ns", "a"), map[string]string{"app": "dash"}),
			want:   []string{"api", "web"},
		},
		"a label selector finds a source as the cache keeps its labels, packed": {
			steps:  []step{{new: deploy("web", dash), passes: true}},
			source: cached(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", GenerateName: "app=dash\nx=y"}}),
			want:   []string{"web"},
		},
		"a label selector does not find a source it does not match": {
			steps:  []step{{new: deploy("web", dash), passes: true}},
			source: labelled(cm("ns", "a"), map[string]string{"app": "shop"}),
		},
		"a label selector does not find a source of another namespace": {
			steps:  []step{{new: deploy("web", dash), passes: true}},
			source: labelled(cm("other", "a"), map[string]string{"app": "dash"}),
		},
		"a ConfigMap selector does not find a Secret": {
			steps:  []step{{new: deploy("web", dash), passes: true}},
			source: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"app": "dash"}}},
		},
		"a Secret selector does not find a Helm release": {
			steps: []step{{new: deploy("web", map[string]string{"nudge.dev/secret-selector": "owner=helm"}), passes: true}},
			source: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sh.helm.release.v1.web.v1",
				Labels: map[string]string{"owner": "helm"}}, Type: HelmReleaseType},
		},
		"a label selector dropped finds nothing": {
			steps:  []step{{new: deploy("web", dash), passes: true}, {old: deploy("web", dash), new: deploy("web", auto), passes: true}},
			source: labelled(cm("ns", "a"), map[string]string{"app": "dash"}),
		},
		"a label selector two workloads share finds both, and one once the other is gone": {
			steps: []step{{new: deploy("web", dash), passes: true}, {new: deploy("api", dash), passes: true},
				{old: deploy("web", dash), passes: true}},
			source: labelled(cm("ns", "a"), map[string]string{"app": "dash"}),
			want:   []string{"api"},
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

// TestRelabeled: which updates of a source Index.Relabeled passes: a change
// of labels that moves the source into or out of a label selector's set.
func TestRelabeled(t *testing.T) {
	cm := func(ns string, l map[string]string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Labels: l}}
	}
	dash, shop, dashToo := map[string]string{"app": "dash"}, map[string]string{"app": "shop"}, map[string]string{"app": "dash", "x": "y"}
	tests := map[string]struct {
		old, new client.Object
		want     bool
	}{
		"labelled into the set":                    {old: cm("ns", shop), new: cm("ns", dash), want: true},
		"labelled out of the set":                  {old: cm("ns", dash), new: cm("ns", nil), want: true},
		"relabelled within the set":                {old: cm("ns", dash), new: cm("ns", dashToo), want: true},
		"labels unchanged":                         {old: cm("ns", dash), new: cm("ns", dash)},
		"relabelled outside every set":             {old: cm("ns", shop), new: cm("ns", map[string]string{"app": "cart"})},
		"labelled into a set of another namespace": {old: cm("other", shop), new: cm("other", dash)},
	}
	x := NewIndex(workload.Deployment, false, dialect.Parser{}, nil)
	x.Tracker().Create(event.CreateEvent{Object: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web",
		Annotations: map[string]string{"nudge.dev/configmap-selector": "app=dash"}}}})
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(x.Relabeled().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})).To(Equal(tt.want))
			g.Expect(x.Relabeled().Create(event.CreateEvent{Object: tt.new})).To(BeFalse(), "a creation is Changed's")
			g.Expect(x.Changed(dialect.Parser{}).Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})).To(Equal(tt.want),
				"Index.Changed passes it too")
			g.Expect(x.Changed(dialect.Parser{}).Create(event.CreateEvent{Object: tt.new})).To(BeTrue(), "and every creation")
		})
	}
}
