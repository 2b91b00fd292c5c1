package model_test

import (
	"flag"
	"os"
	"testing"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// suite is the kube-apiserver every sequence plays on, and its client; no
// workload controller runs, so a Deployment's pod-template changes are its
// rollouts as users would see them.
var suite nt.Suite

var (
	seedFlag      = flag.Uint64("seed", 0, "replay the one sequence of this seed (printed on failure)")
	stepsFlag     = flag.Int("steps", 60, "steps per sequence")
	sequencesFlag = flag.Int("sequences", 6, "sequences to play, from random seeds")
	steadyFlag    = flag.Bool("steady", false, "no step stops, restarts or fails nudge over (as in the soak)")
	noAtOnceFlag  = flag.Bool("no-at-once", false, "draw no source change made at once after a workload's creation (to replay a seed found before them)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(suite.Main(m))
}
