package eviction_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
)

func TestOwnerOf(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	custom := func(spec, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.dev/v1", "kind": "Cluster", "spec": spec}}
		if status != nil {
			u.Object["status"] = status
		}
		u.SetGeneration(4)
		return u
	}
	tests := map[string]struct {
		obj      client.Object
		selector string
		want     int
		observed bool
		bad      bool
	}{
		"a StatefulSet: its selector, its replicas, its generation observed": {
			obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Selector: sel, Replicas: ptr.To[int32](3)},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: 2}},
			selector: "app=db", want: 3, observed: true,
		},
		"a StatefulSet whose controller has not seen the change yet": {
			obj:      &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.StatefulSetSpec{Selector: sel}, Status: appsv1.StatefulSetStatus{ObservedGeneration: 2}},
			selector: "app=db", want: 1,
		},
		"a DaemonSet wants its desired number scheduled": {
			obj: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.DaemonSetSpec{Selector: sel},
				Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2}},
			selector: "app=db", want: 2, observed: true,
		},
		"a custom resource with a selector, replicas and an observed generation": {
			obj:      custom(map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "db"}}, "replicas": int64(3)}, map[string]any{"observedGeneration": int64(4)}),
			selector: "app=db", want: 3, observed: true,
		},
		"a custom resource without any: every pod it controls, as many as it has, observed": {
			obj: custom(map[string]any{}, nil), observed: true,
		},
		"a custom resource whose status lags": {
			obj: custom(map[string]any{}, map[string]any{"observedGeneration": int64(3)}),
		},
		"a selector that does not parse is an error": {
			obj: custom(map[string]any{"selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Near"}}}}, nil),
			bad: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o, err := eviction.OwnerOf(tc.obj)
			if tc.bad {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tc.selector == "" {
				g.Expect(o.Selector).To(BeNil())
			} else {
				g.Expect(o.Selector.String()).To(Equal(tc.selector))
			}
			g.Expect(o.Want).To(Equal(tc.want), "want")
			g.Expect(o.Observed).To(Equal(tc.observed), "observed")
		})
	}
}

func TestBackoff(t *testing.T) {
	g := NewWithT(t)
	var b eviction.Backoff
	var got []time.Duration
	for range 8 {
		got = append(got, b.Next("shop/db"))
	}
	g.Expect(got).To(Equal([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}))
	g.Expect(b.Next("shop/web")).To(Equal(time.Second), "per workload")
	b.Reset("shop/db")
	g.Expect(b.Next("shop/db")).To(Equal(time.Second), "after a reset")
}
