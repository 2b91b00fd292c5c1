// Package flux holds nudge to Flux, on a real kube-apiserver beside a
// running nudge: workloads applied by the library Flux's kustomize-controller
// applies with (github.com/fluxcd/pkg/ssa, the version it pins), set up as
// its apply is, and by kustomize-controller itself (hack/flux.sh builds it)
// from a GitRepository whose artifacts the test serves.
package flux

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// plane is the kube-apiserver every test here talks to; no workload
// controller runs, so the pod-template writes to a Deployment are nudge's
// rollouts and Flux's applies.
var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) { os.Exit(nt.Main(m, &plane, &k8s)) }
