package eviction_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// The plane runs the disruption controller (a PodDisruptionBudget's
// status), the StatefulSet and DaemonSet controllers, the scheduler and kwok
// nodes whose pods are Ready once scheduled and gone once deleted.
var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) {
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.Cluster, Nodes: 2}, func(p *testbed.Plane) {
		c, err := nt.Client(p.Config())
		if err != nil {
			panic(err)
		}
		plane, k8s = p, c
	}))
}

// namespace returns a namespace of t's own, deleted with its pods after t
// (the nodes hold 110 pods each).
func namespace(t *testing.T) (context.Context, *WithT, string) {
	t.Helper()
	t.Parallel()
	g := NewWithT(t)
	ns, err := plane.GenerateNamespace(t.Context(), "ev-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		gone := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := k8s.Delete(context.Background(), gone); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	return t.Context(), g, ns
}
