package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/refs"
)

// podStatus is a SecretProviderClassPodStatus of namespace shop for class.
func podStatus(class string) client.Object {
	u := csi.NewPodStatus()
	u.SetNamespace("shop")
	u.SetName("web-1-shop-" + class)
	u.Object["status"] = map[string]any{"secretProviderClassName": class, "mounted": true}
	return u
}

func TestSourceOf(t *testing.T) {
	tests := map[string]struct {
		obj  client.Object
		want refs.Source
		ok   bool
	}{
		"a ConfigMap stands for itself": {
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}},
			want: refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}, ok: true,
		},
		"a pod status stands for its SecretProviderClass": {
			obj:  podStatus("vault-db"),
			want: refs.Source{Kind: refs.SecretProviderClass, Namespace: "shop", Name: "vault-db"}, ok: true,
		},
		"a pod status without a class stands for nothing": {obj: podStatus("")},
		"a Deployment is no source":                       {obj: &appsv1.Deployment{}},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := SourceOf(tc.obj)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
