package model_test

import (
	"flag"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/testbed"
)

var (
	// plane is the kube-apiserver every sequence plays on; no workload
	// controller runs, so a Deployment's pod-template changes are its
	// rollouts as users would see them.
	plane *testbed.Plane
	k8s   client.Client
)

var (
	seedFlag      = flag.Uint64("seed", 0, "replay the one sequence of this seed (printed on failure)")
	stepsFlag     = flag.Int("steps", 60, "steps per sequence")
	sequencesFlag = flag.Int("sequences", 6, "sequences to play, from random seeds")
	steadyFlag    = flag.Bool("steady", false, "no step stops, restarts or fails nudge over (as in the soak)")
	noAtOnceFlag  = flag.Bool("no-at-once", false, "draw no source change made at once after a workload's creation (to replay a seed found before them)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testbed.Main(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane) {
		plane = p
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		c, err := client.New(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}
