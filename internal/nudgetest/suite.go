package nudgetest

import (
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// Suite is what the integration tests of one package share: a
// kube-apiserver of their own (testbed.APIServer: no workload controller
// runs, so the pod-template writes to a Deployment are nudge's rollouts and
// the tests' own) and a client of it (Client). A package declares one, runs
// it from TestMain and sets up each test with it:
//
//	var suite nt.Suite
//
//	func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }
//
//	func TestX(t *testing.T) { e := suite.Setup(t, true, nil); … }
type Suite struct {
	// Plane is the kube-apiserver, set when Main starts it.
	Plane *testbed.Plane
	// K8s is the tests' client of Plane, set with it.
	K8s client.WithWatch
}

// Main starts the suite's kube-apiserver, sets Plane and K8s, and runs m:
// a TestMain body. It returns m's exit code (1, with the error on standard
// error, when the plane does not start).
func (s *Suite) Main(m *testing.M) int {
	return testbed.Main(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane) {
		c, err := Client(p.Config())
		if err != nil {
			panic(err)
		}
		s.Plane, s.K8s = p, c
	})
}

// Setup marks t parallel, creates a namespace for it on the suite's plane
// and, when start, starts a nudge watching that namespace with mutate
// applied to its options. It fails t when the namespace cannot be created.
func (s *Suite) Setup(t *testing.T, start bool, mutate func(*options.Options)) *Env {
	t.Helper()
	t.Parallel()
	e := &Env{T: t, G: gomega.NewWithT(t), Ctx: t.Context(), K8s: s.K8s}
	ns, err := s.Plane.GenerateNamespace(e.Ctx, "it-")
	e.G.Expect(err).NotTo(gomega.HaveOccurred())
	e.NS = ns
	e.Templates = WatchTemplates(t, s.K8s, ns)
	if start {
		e.Nudge = Start(t, s.Plane.Config(), ns, mutate)
	}
	return e
}
