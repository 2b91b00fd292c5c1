// Package chaos holds nudge's rules to what a real cluster does to it: its
// process killed during a fan-out, its leader killed, kube-apiserver
// restarted during a burst, etcd compacted so informers list again, and a
// second writer racing its writes. nudge runs as a process of its own (the
// binary built from this tree) against a local kube-apiserver without
// controllers, so every pod-template change of a Deployment is nudge's.
//
// Rollouts are counted at the store: a watch of etcd (rollouts_test.go)
// sees every revision of every Deployment, whatever kube-apiserver does.
//
// The default sizes keep the package within a few minutes on a 2-core
// machine; -chaos.full runs the sizes of issue 13 (a fan-out of 500, a burst
// of 200).
package chaos

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// full runs the sizes of issue 13 instead of the quicker defaults.
var full = flag.Bool("chaos.full", false, "run the chaos tests at full size: a fan-out of 500, a burst of 200")

var (
	// plane is the kube-apiserver the tests share; each test has its own
	// namespace, and they run one after another (a restart of
	// kube-apiserver or a fan-out of hundreds would disturb a neighbour).
	plane *testbed.Plane
	k8s   client.Client
	// nudgeBin is the nudge binary built from this tree.
	nudgeBin string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return nudgetest.MainWithBinary(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane, bin string) {
		plane, nudgeBin = p, bin
		var err error
		if k8s, err = newClient(p); err != nil {
			panic(err)
		}
	})
}

// newClient returns an admin client of p.
func newClient(p *testbed.Plane) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(p.Config(), client.Options{Scheme: scheme})
}

// size returns n, or full with -chaos.full.
func size(n, fullSize int) int {
	if *full {
		return fullSize
	}
	return n
}

// deploymentNames returns the names of n Deployments: web-000, web-001, …
func deploymentNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("web-%03d", i)
	}
	return names
}
