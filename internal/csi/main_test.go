package csi_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// plane is the kube-apiserver every test here talks to; no workload
// controller runs, so the pod-template writes to a Deployment are nudge's
// rollouts (and the test's own rewrites).
var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) { os.Exit(nt.Main(m, &plane, &k8s)) }

// env is one test's namespace and its nudge (see nudgetest.Env), with the
// helpers of this package's tests.
type env struct{ *nt.Env }

// setup creates a namespace for t and starts a nudge watching it, unless
// start is false.
func setup(t *testing.T, start bool, mutate func(*options.Options)) *env {
	t.Helper()
	return &env{nt.Setup(t, plane, k8s, start, mutate)}
}
