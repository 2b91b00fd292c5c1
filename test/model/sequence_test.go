package model_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"nudge.dev/nudge/test/model"
)

// regressions are sequences that once found nudge and the model apart,
// played by every run besides the random ones: the seed and how many of
// its steps.
var regressions = []played{
	// A ConfigMap changed just after its Deployment's creation while a
	// Secret it requires was missing, the state then wiped by a GitOps
	// replace and baselined: creating the Secret rolled it.
	{1439725442987618523, 10, false},
	// A ConfigMap changed just after a Deployment's creation, while the
	// Deployment's annotation named other sources; the annotation then
	// switched to auto, so the ConfigMap entered the references and was
	// baselined: the next reconcile took it for young and rolled.
	{1123946407420047138, 7, false},
	// A Secret an optional reference reads created at once after its
	// Deployment's creation, and a ConfigMap created so: first sight,
	// after the creation, took it for what the pods started with.
	{672628336299663927, 3, true},
	{3935624302066449021, 3, true},
	{8718359618417229904, 5, true},
	// A ConfigMap a Deployment requires deleted at once after the
	// Deployment's creation: first sight, after the deletion, forgot what
	// the pods started with, so its return with other content would not
	// roll.
	{8783376077440026994, 6, true},
	// A Deployment whose required ConfigMap was deleted, then replaced by a
	// GitOps tool within the minute: its first sight recorded the deleted
	// content, which the new pods, waiting for the ConfigMap, never ran.
	// It failed again, now and then, where a failover left the lead to the
	// replica that had stood by since the creation: it had not seen the
	// leader's baseline (TestStandbyKnowsTheLeadersBaseline).
	{9148113354951672695, 22, true},
}

// played is a sequence to play: its seed and how many of its steps;
// atOnce draws steps that change a source at once after a workload's
// creation (Generator.AtOnce), which the regressions found before them do
// not.
type played struct {
	seed   uint64
	steps  int
	atOnce bool
}

// Rules 1-8 across sequences: after every step of a random sequence of
// source and workload changes, restarts and failovers, each Deployment has
// had exactly the rollouts the model says, and nudge's applied state holds
// the sources the model says. -seed replays one sequence; -steps and
// -sequences size the run; with -nudge-bin, nudge runs as processes of that
// binary, and an abrupt stop is a kill -9.
func TestRulesAcrossSequences(t *testing.T) {
	seeds := []played{{*seedFlag, *stepsFlag, !*noAtOnceFlag}}
	if *seedFlag == 0 {
		seeds = slices.Clone(regressions)
		for range *sequencesFlag {
			seeds = append(seeds, played{rand.Uint64() >> 1, *stepsFlag, true})
		}
	}
	for _, p := range seeds {
		seed := p.seed
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			ns, err := suite.Plane.GenerateNamespace(t.Context(), "model-")
			if err != nil {
				t.Fatal(err)
			}
			ha := seed%2 == 1
			var run runner = &inProcess{t: t, ns: ns, ha: ha}
			if *nudgeBinFlag != "" {
				run = &processes{t: t, ns: ns, ha: ha}
			}
			run.start()
			gen := model.NewGenerator(seed, ha)
			gen.Steady, gen.AtOnce = *steadyFlag, p.atOnce
			s, err := newSequence(t, seed, ns, gen, run)
			if err != nil {
				t.Fatal(err)
			}
			for range p.steps {
				if err := s.step(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			s.end(t, *seedFlag != 0)
		})
	}
}

// end logs what sequence s played (every step when verbose) and, since a
// rollout nudge should not have made may come late, looks for one for 3 s
// after the last step settled.
func (s *sequence) end(t *testing.T, verbose bool) {
	t.Helper()
	holds := ""
	if s.w.clock != nil {
		holds = fmt.Sprintf(", holds begun: %d of the storm brake, %d of the window", s.m.Holds[model.HeldStorm], s.m.Holds[model.HeldWindow])
	}
	t.Logf("seed %d: %d steps, %d rollouts%s", s.seed, len(s.done), s.rollouts(), holds)
	if verbose {
		t.Logf("steps:\n  %s", strings.Join(s.done, "\n  "))
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if diff := s.w.diff(s.m, s.seen); diff != "" {
			t.Fatal(s.report("after the last step: " + diff))
		}
		time.Sleep(100 * time.Millisecond) // the polling interval of a "nothing more happens" check
	}
}

// sequence is one sequence being played: its world on the API server, its
// model, and the steps done.
type sequence struct {
	seed uint64
	w    *world
	m    *model.Model
	gen  *model.Generator
	run  runner
	seen digests
	done []string
	// replay is how to play the sequence again: the command, up to the
	// number of steps, drawn.
	replay string
	drawn  int
}

func newSequence(t *testing.T, seed uint64, ns string, gen *model.Generator, run runner) (*sequence, error) {
	w, err := newWorld(t, ns)
	steady := ""
	if gen.Steady {
		steady = " -steady"
	}
	if !gen.AtOnce {
		steady += " -no-at-once"
	}
	replay := fmt.Sprintf("go test ./test/model -run 'TestRulesAcrossSequences' -seed %d%s -steps", seed, steady)
	return &sequence{seed: seed, w: w, m: model.New(), gen: gen, run: run, seen: digests{}, replay: replay}, err
}

// step draws the next step and plays it.
func (s *sequence) step(ctx context.Context) error {
	s.drawn++
	return s.play(ctx, s.gen.Next(s.m))
}

// play performs step st on the world and the model, and waits up to a
// minute for the world to match the model: the rollouts of every
// Deployment and, while nudge runs, its applied state and holds.
func (s *sequence) play(ctx context.Context, st model.Step) error {
	line := fmt.Sprintf("%2d. %s %s", len(s.done)+1, time.Now().Format("15:04:05.000"), st)
	if st.Op == model.Advance {
		line += ", to " + s.m.Now.Add(st.By).Format(time.RFC3339)
	}
	s.done = append(s.done, line)
	if s.w.clock != nil {
		now := s.m.Now
		if st.Op == model.Advance {
			now = now.Add(st.By)
		}
		if err := s.w.tick(now); err != nil {
			return errors.New(s.report(err.Error()))
		}
	}
	switch st.Op {
	case model.StopNudge:
		s.run.stop(st.Abrupt)
	case model.StartNudge:
		s.run.start()
	case model.RestartNudge:
		s.run.stop(st.Abrupt)
		s.run.start()
	case model.Failover:
		s.run.failover(st.Replica, st.Abrupt)
	default:
		if err := s.w.do(s.m, st); err != nil {
			return errors.New(s.report(fmt.Sprintf("the step's write failed: %v", err)))
		}
	}
	s.m.Apply(st)
	if s.m.Up {
		if err := s.w.fence(); err != nil {
			return errors.New(s.report(err.Error()))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		diff := s.w.diff(s.m, s.seen)
		switch {
		case diff == "":
			s.seen.learn(s.w.pending)
			return nil
		case time.Now().After(deadline):
			return errors.New(s.report("after a minute:\n" + diff))
		case ctx.Err() != nil:
			return errors.New(s.report(fmt.Sprintf("%v:\n%s", ctx.Err(), diff)))
		}
		time.Sleep(50 * time.Millisecond) // the polling interval of the wait for the model's state
	}
}

// report describes a mismatch: the seed, how to replay it, the steps so far
// and the differences.
func (s *sequence) report(diff string) string {
	return fmt.Sprintf("seed %d (replay with: %s %d), namespace %s, steps:\n  %s\ndifferences (observed, want):\n%s",
		s.seed, s.replay, s.drawn, s.w.ns, strings.Join(s.done, "\n  "), diff)
}

func (s *sequence) rollouts() int {
	n := 0
	for _, w := range s.m.Workloads {
		n += w.Rollouts
	}
	return n
}
