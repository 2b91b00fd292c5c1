package csi

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// podStatus is a SecretProviderClassPodStatus as the driver writes it.
func podStatus(class string, mounted bool, objects ...[2]string) *unstructured.Unstructured {
	u := NewPodStatus()
	u.SetNamespace("shop")
	u.SetName("web-1-shop-" + class)
	u.SetResourceVersion("7")
	u.SetLabels(map[string]string{"internal.secrets-store.csi.k8s.io/node-name": "node-1"})
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "u"}})
	list := make([]any, len(objects))
	for i, o := range objects {
		list[i] = map[string]any{"id": o[0], "version": o[1]}
	}
	u.Object["status"] = map[string]any{"podName": "web-1", "secretProviderClassName": class, "mounted": mounted,
		"targetPath": "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount", "objects": list}
	return u
}

func TestPodStatusChanged(t *testing.T) {
	base := podStatus("vault-db", true, [2]string{"db/password", "1"})
	tests := map[string]struct {
		mutate func(*unstructured.Unstructured)
		want   bool
	}{
		"labels only are no change": {
			mutate: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "shop"}) },
		},
		"annotations only are no change": {
			mutate: func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a": "b"}) },
		},
		"the target path is no change": {
			mutate: func(u *unstructured.Unstructured) { u.Object["status"].(map[string]any)["targetPath"] = "/x" },
		},
		"a new version is a change": {
			mutate: func(u *unstructured.Unstructured) {
				u.Object["status"].(map[string]any)["objects"] = []any{map[string]any{"id": "db/password", "version": "2"}}
			},
			want: true,
		},
		"an unmount is a change": {
			mutate: func(u *unstructured.Unstructured) { u.Object["status"].(map[string]any)["mounted"] = false },
			want:   true,
		},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			n := base.DeepCopy()
			tc.mutate(n)
			g.Expect(PodStatusChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n})).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(PodStatusChanged().Create(event.CreateEvent{Object: base, IsInInitialList: true})).To(BeFalse(),
		"the initial list: each workload is reconciled on its own first sight")
	g.Expect(PodStatusChanged().Create(event.CreateEvent{Object: base})).To(BeTrue(), "a new pod's mount")
	g.Expect(PodStatusChanged().Delete(event.DeleteEvent{Object: base})).To(BeTrue(), "a pod gone")
}
