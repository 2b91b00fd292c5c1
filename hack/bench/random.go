package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/hack/bench/watch"
)

// The random scenarios measure what a user's load test would: updates at a
// fixed rate, each to the ConfigMap of one of the stream's Deployments
// picked at random (with a seeded generator, so that a run repeats), so
// that some come soon after the previous update of the same ConfigMap (at
// 20 a second over 100, about 18 % within a second) and meet the
// controller's rollout window, which the steady streams' round-robin never
// does. Each run streams on the controller under test and then on the
// floor, in the order ABBA over the runs, as the floor scenario's turns
// (turnTo); the checks compare each Deployment's rollouts and its
// ConfigMap's updates by resourceVersion (checkRandom).

// random runs the random scenario, or with restart the random-restart
// one, cfg.RandomRuns times on each side, and leaves the controller under
// test running.
func (b *bench) random(ctx context.Context, restart bool) (*results.Random, error) {
	name, rate, restartAt := "random", b.cfg.RandomRate, time.Duration(0)
	if restart {
		name, rate, restartAt = "random-restart", b.cfg.RandomRestartRate, b.cfg.RandomRestartAt
	}
	res := &results.Random{Rate: rate, Sources: b.cfg.RandomSources, Seconds: b.cfg.RandomFor.Seconds(),
		Seed: b.cfg.RandomSeed, RestartAtSeconds: restartAt.Seconds(), FloorCmd: b.cfg.FloorCmd}
	if b.res.Process == nil { // the end figures are the controller's, not the floor's
		s, err := b.ctrl.Stats()
		if err != nil {
			return nil, err
		}
		b.res.Process = processResult(s)
	}
	for run := range b.cfg.RandomRuns {
		r := results.RandomRun{Seed: b.cfg.RandomSeed + int64(run)}
		sides := []bool{false, true} // floor?
		if run%2 == 1 {
			sides = []bool{true, false}
		}
		for _, floor := range sides {
			side, who := &r.Controller, b.cfg.ControllerName
			if floor {
				side, who = &r.Floor, "floor"
			}
			if err := b.turnTo(ctx, floor); err != nil {
				return nil, err
			}
			if _, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout); err != nil {
				return nil, err
			}
			if err := b.phase(fmt.Sprintf("%s-%d-%s", name, run+1, who)); err != nil {
				return nil, err
			}
			if err := b.randomStream(ctx, side, rate, r.Seed, restartAt); err != nil {
				return nil, fmt.Errorf("run %d, %s: %w", run+1, who, err)
			}
			logf("Random stream (%s, run %d, %s): %d updates (%d < 1 s after the previous of their ConfigMap), %d rollouts; %d doubled, %d without update, %d missed; %d of %d hashed rollouts of the same content as the one before; p50 %.1f ms, p99 %.1f ms",
				name, run+1, who, side.Updates, side.Close, side.Rollouts, side.Doubled, side.WithoutUpdate, side.Missed, side.SameContent, side.Hashed, side.Latency.P50, side.Latency.P99)
		}
		res.Runs = append(res.Runs, r)
	}
	return res, b.turnTo(ctx, false)
}

// randomStream streams updates at rate a second for cfg.RandomFor, each to
// the first ConfigMap of one of cfg.RandomSources fresh Deployments picked
// by a generator seeded with seed, killing (SIGKILL) and restarting the
// running controller at restartAt unless 0; then waits until each
// Deployment rolled after its last update (or the rollout window plus
// cfg.ChangeTimeout), and the window and cfg.Settle more for a rollout too
// many, and checks the rollouts. It ends the current phase, whose CPU and
// requests it counts per update.
func (b *bench) randomStream(ctx context.Context, side *results.RandomSide, rate float64, seed int64, restartAt time.Duration) error {
	side.Load = results.LoadAvg()
	ids := b.alloc.take(b.cfg.RandomSources)
	keys := make([]string, len(ids))
	for i, g := range ids {
		keys[i] = b.layout.Deployment(g).String()
	}
	pick := rand.New(rand.NewPCG(uint64(seed), 0))
	period := time.Duration(float64(time.Second) / rate)
	n, kill := int(b.cfg.RandomFor/period), -1
	if restartAt > 0 {
		kill = int(restartAt / period)
	}
	var updates []update
	last := map[string]uint64{}
	begin := time.Now()
	for i := range n {
		if i == kill {
			if err := b.killController(); err != nil {
				return err
			}
			if err := b.startController(); err != nil {
				return err
			}
		}
		time.Sleep(time.Until(begin.Add(time.Duration(i) * period)))
		j := pick.IntN(len(ids))
		at, rv, err := b.changer.ChangeRV(ctx, b.layout.Uses(ids[j])[1].Source)
		if err != nil {
			return err
		}
		updates = append(updates, update{key: keys[j], at: at, rv: rv})
		last[keys[j]] = rv
	}
	deadline := b.cfg.Window + b.cfg.ChangeTimeout
	if missing := b.watcher.WaitRolledAfter(ctx, last, deadline); len(missing) > 0 {
		logf("Random stream: %d Deployments not rolled after their last update within %v, e.g. %s", len(missing), deadline, missing[0])
	}
	if err := b.settle(ctx, b.cfg.Window+b.cfg.Settle); err != nil {
		return err
	}
	var rollouts []watch.Rollout
	for _, r := range b.rollouts(begin, time.Now()) {
		if r.RV == 0 {
			return fmt.Errorf("the rollout of %s seen at %s has no numeric resourceVersion", r.Key, clock(r.At))
		}
		rollouts = append(rollouts, r)
	}
	c := checkRandom(updates, rollouts, keys, deadline)
	side.Updates, side.Close, side.Latency = len(updates), c.close, stats.NewDistribution(c.lats)
	side.Rollouts, side.Doubled, side.WithoutUpdate, side.Missed = c.rollouts, c.doubled, c.withoutUpdate, c.missed
	side.Hashed, side.SameContent = c.hashed, c.sameContent
	for _, key := range c.odd[:min(len(c.odd), 10)] {
		logf("Random stream: %s doubled, rolled without update or missed: %s", key, timeline(key, updates, rollouts, begin))
	}
	if _, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout); err != nil {
		return err
	}
	return b.perUpdate(len(updates), &side.CPUPerUpdate, &side.RequestsPerUpdate)
}
