package main

import (
	"context"
	"sort"
	"sync"
	"time"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// scenarioProfile is the length of the CPU profiles of the fan-out and burst
// scenarios, when profiling.
const scenarioProfile = 4 * time.Second

// fanout changes the one ConfigMap every fan-out Deployment uses and times
// until all have rolled.
func (b *bench) fanout(ctx context.Context) error {
	res := &results.Many{Load: results.LoadAvg(), Changes: 1, Workloads: b.cfg.FanOut}
	b.res.FanOut = res
	if err := b.phase("fanout"); err != nil {
		return err
	}
	defer b.prof().cpu(ctx, "cpu-fanout.pprof", scenarioProfile)()
	return b.changeFanOut(ctx, res)
}

// changeFanOut changes the fan-out ConfigMap and fills res with the
// rollouts of every fan-out Deployment (awaitMany).
func (b *bench) changeFanOut(ctx context.Context, res *results.Many) error {
	keys := make([]string, b.cfg.FanOut)
	for i := range keys {
		keys[i] = b.layout.FanOutDeployment(i).String()
	}
	sent, rtt, err := b.changer.Change(ctx, b.layout.FanOutUse(0).Source)
	if err != nil {
		return err
	}
	res.SentSeconds = stats.Seconds(rtt)
	return b.awaitMany(ctx, res, keys, sent, "Fan-out")
}

// burst changes cfg.Burst Secrets at once, each used by one Deployment, and
// times until all of those have rolled.
func (b *bench) burst(ctx context.Context) error {
	res := &results.Many{Load: results.LoadAvg(), Changes: b.cfg.Burst}
	b.res.Burst = res
	if err := b.phase("burst"); err != nil {
		return err
	}
	defer b.prof().cpu(ctx, "cpu-burst.pprof", scenarioProfile)()
	return b.changeBurst(ctx, res)
}

// changeBurst changes the first Secret of each of the next cfg.Burst
// Deployments at once and fills res with their rollouts (awaitMany).
func (b *bench) changeBurst(ctx context.Context, res *results.Many) error {
	ids := b.alloc.take(b.cfg.Burst)
	var keys []string
	for _, g := range ids {
		keys = append(keys, b.layout.Users(b.layout.Uses(g)[0].Source)...)
	}
	keys = dedupe(keys)
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	start := make(chan struct{})
	for i, g := range ids {
		wg.Go(func() {
			<-start
			_, _, errs[i] = b.changer.Change(ctx, b.layout.Uses(g)[0].Source)
		})
	}
	close(start)
	wg.Wait()
	res.SentSeconds = stats.Seconds(time.Since(begin))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	res.Workloads = len(keys)
	return b.awaitMany(ctx, res, keys, begin, "Burst")
}

// dedupe returns keys without repeats, in their first order.
func dedupe(keys []string) []string {
	seen := map[string]bool{}
	out := keys[:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// awaitMany waits until every key has rolled after since, then cfg.Settle,
// and fills res.
func (b *bench) awaitMany(ctx context.Context, res *results.Many, keys []string, since time.Time, what string) error {
	rolled, missing := b.watcher.WaitRolled(ctx, keys, since, b.cfg.WaitTimeout)
	res.Rolled, res.Misses = len(rolled), len(missing)
	var after []time.Duration
	for _, at := range rolled {
		after = append(after, at.Sub(since))
	}
	sort.Slice(after, func(i, j int) bool { return after[i] < after[j] })
	if len(after) > 0 {
		res.FirstSeconds = ptrSeconds(after[0])
		res.P50Seconds = ptrSeconds(after[(len(after)-1)/2])
		res.LastSeconds = ptrSeconds(after[len(after)-1])
		if len(missing) == 0 {
			res.AllSeconds = res.LastSeconds
		}
	}
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return err
	}
	expected := map[string]bool{}
	for _, k := range keys {
		expected[k] = true
	}
	res.OtherRollouts = unexpected(b.rollouts(since, time.Now()), expected)
	if res.AllSeconds != nil {
		logf("%s: all %d rolled in %.3f s (first %.3f s, p50 %.3f s), %d other rollouts", what, res.Rolled, *res.AllSeconds, *res.FirstSeconds, *res.P50Seconds, res.OtherRollouts)
	} else {
		logf("%s: %d of %d rolled within %v, %d other rollouts", what, res.Rolled, len(keys), b.cfg.WaitTimeout, res.OtherRollouts)
	}
	return nil
}
