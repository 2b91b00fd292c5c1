package model_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/model"
)

// Rules 1-8 across sequences: after every step of a random sequence of
// source and workload changes, restarts and failovers, each Deployment has
// had exactly the rollouts the model says, and nudge's applied state holds
// the sources the model says. -seed replays one sequence; -steps and
// -sequences size the run.
func TestRulesAcrossSequences(t *testing.T) {
	seeds := []uint64{*seedFlag}
	if *seedFlag == 0 {
		seeds = seeds[:0]
		for range *sequencesFlag {
			seeds = append(seeds, rand.Uint64()>>1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			play(t, seed, *stepsFlag, func(ns string, ha bool) runner { return &inProcess{t: t, ns: ns, ha: ha} })
		})
	}
}

// play plays the sequence of seed, steps long, against a nudge that
// newRunner runs; sequences of odd seeds run two replicas.
func play(t *testing.T, seed uint64, steps int, newRunner func(ns string, ha bool) runner) {
	g := NewWithT(t)
	ha := seed%2 == 1
	ns, err := plane.GenerateNamespace(t.Context(), "model-")
	g.Expect(err).NotTo(HaveOccurred())
	w := newWorld(t, ns)
	m := model.New()
	gen := model.NewGenerator(seed, ha)
	run := newRunner(ns, ha)
	run.start()
	seen := digests{}

	var done []string
	report := func(diff string) string {
		return fmt.Sprintf("seed %d (replay with: go test ./test/model -run 'TestRulesAcrossSequences' -seed %d), "+
			"namespace %s, steps:\n  %s\ndifferences (workload: observed, want):\n%s",
			seed, seed, ns, strings.Join(done, "\n  "), diff)
	}
	for i := range steps {
		s := gen.Next(m)
		done = append(done, fmt.Sprintf("%2d. %s", i+1, s))
		switch s.Op {
		case model.StopNudge:
			run.stop(s.Abrupt)
		case model.StartNudge:
			run.start()
		case model.RestartNudge:
			run.stop(s.Abrupt)
			run.start()
		case model.Failover:
			run.failover(s.Replica, s.Abrupt)
		default:
			g.Expect(w.do(m, s)).To(Succeed(), func() string { return report("(the step's write failed)") })
		}
		m.Apply(s)
		var diff string
		g.Eventually(func() string {
			diff = w.diff(m, seen)
			return diff
		}).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).Should(BeEmpty(),
			func() string { return report(diff) })
		seen.learn(w.pending)
	}
	rollouts := 0
	for _, mw := range m.Workloads {
		rollouts += mw.Rollouts
	}
	t.Logf("seed %d: %d steps, %d rollouts", seed, steps, rollouts)
	var diff string
	g.Consistently(func() string {
		diff = w.diff(m, seen)
		return diff
	}).WithTimeout(3*time.Second).Should(BeEmpty(), func() string { return report(diff) })
}
