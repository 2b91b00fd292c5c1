// Package flux holds nudge to Flux, on a real kube-apiserver beside a
// running nudge: workloads applied by the library Flux's kustomize-controller
// applies with (github.com/fluxcd/pkg/ssa, the version it pins), set up as
// its apply is, and by kustomize-controller itself (hack/flux.sh builds it)
// from a GitRepository whose artifacts the test serves.
package flux

import (
	"os"
	"testing"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// suite is the kube-apiserver every test here talks to, and its client; no
// workload controller runs, so the pod-template writes to a Deployment are
// nudge's rollouts and Flux's applies.
var suite nt.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }
