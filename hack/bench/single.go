package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/hack/bench/watch"
)

// latency changes cfg.Latency sources one after another, each used by one
// Deployment, and times each from sending the patch to seeing the
// Deployment's pod template change. Change i changes source (i div 4) mod 4
// of Deployment i of its range, so that both kinds are changed in each of
// the four ways.
func (b *bench) latency(ctx context.Context) error {
	res := &results.Latency{Load: results.LoadAvg(), Changes: b.cfg.Latency}
	b.res.Latency = res
	if err := b.phase("latency"); err != nil {
		return err
	}
	defer b.prof().cpu(ctx, "cpu-latency.pprof", b.cfg.ProfileFor)()
	begin := time.Now()
	c, err := b.changeEach(ctx, b.alloc.take(b.cfg.Latency))
	if err != nil {
		return err
	}
	res.Misses = c.misses
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return err
	}
	res.OtherRollouts = unexpected(b.rollouts(begin, time.Now()), c.expected)
	res.Latency, res.PatchRTT = stats.NewDistribution(c.lats), stats.NewDistribution(c.rtts)
	res.ByWay = map[string]stats.Distribution{}
	for way, ds := range c.byWay {
		res.ByWay[way] = stats.NewDistribution(ds)
	}
	logf("Latency: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, %d misses, %d other rollouts",
		res.Latency.P50, res.Latency.P90, res.Latency.P99, res.Latency.Max, res.Misses, res.OtherRollouts)
	return nil
}

// singleChanges are sequential changes, each awaited: the latencies of
// those that rolled within cfg.ChangeTimeout (also by kind and way of use),
// the benchmark's patch round trips, the Deployments they may roll, and the
// misses.
type singleChanges struct {
	lats, rtts []time.Duration
	sent       []time.Time // when each of lats was sent
	byWay      map[string][]time.Duration
	expected   map[string]bool
	misses     int
}

// changeEach changes one source of each Deployment of ids in turn (change i
// changes source (i div 4) mod 4 of its Deployment) and waits for each
// change's rollout before the next.
func (b *bench) changeEach(ctx context.Context, ids []int) (singleChanges, error) {
	c := singleChanges{byWay: map[string][]time.Duration{}, expected: map[string]bool{}}
	for i, g := range ids {
		use := b.layout.Uses(g)[(i/4)%4]
		key := b.layout.Deployment(g).String()
		for _, k := range b.layout.Users(use.Source) {
			c.expected[k] = true
		}
		sent, rtt, err := b.changer.Change(ctx, use.Source)
		if err != nil {
			return c, err
		}
		c.rtts = append(c.rtts, rtt)
		rolled, missing := b.watcher.WaitRolled(ctx, []string{key}, sent, b.cfg.ChangeTimeout)
		if len(missing) > 0 {
			c.misses++
			logf("Missed: %s (%s) did not roll within %v of a change of %s", key, use.Way, b.cfg.ChangeTimeout, use.Source)
			continue
		}
		lat := rolled[key].Sub(sent)
		c.lats = append(c.lats, lat)
		c.sent = append(c.sent, sent)
		way := use.Source.Kind + " " + use.Way.String()
		c.byWay[way] = append(c.byWay[way], lat)
	}
	return c, nil
}

// slowest returns the n slowest of c's changes, slowest first, as "latency
// at sent (index)", for a log line that can be set beside the controller's
// log.
func (c singleChanges) slowest(n int) []string {
	idx := make([]int, len(c.lats))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.lats[idx[a]] > c.lats[idx[b]] })
	var out []string
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, fmt.Sprintf("%.1f ms at %s (#%d)", stats.MS(c.lats[i]), clock(c.sent[i].UTC()), i))
	}
	return out
}

// noop changes only a label of cfg.NoOp sources (Secrets and ConfigMaps in
// turn), each used by one Deployment, and counts the rollouts that follow,
// waiting cfg.Settle after the last: there must be none.
func (b *bench) noop(ctx context.Context) error {
	res := &results.NoOp{Load: results.LoadAvg(), Changes: b.cfg.NoOp}
	b.res.NoOp = res
	if err := b.phase("noop"); err != nil {
		return err
	}
	begin := time.Now()
	for i, g := range b.alloc.take(b.cfg.NoOp) {
		use := b.layout.Uses(g)[i%2]
		if err := b.changer.Relabel(ctx, use.Source, fmt.Sprint(i)); err != nil {
			return err
		}
	}
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return err
	}
	res.Rollouts = len(b.rollouts(begin, time.Now()))
	logf("No-op: %d rollouts from %d label-only changes", res.Rollouts, res.Changes)
	return nil
}

// coalesce changes one ConfigMap, used by one Deployment, cfg.Coalesce times
// cfg.CoalesceGap apart, then waits the controller's rollout window and
// cfg.Settle, and counts that Deployment's rollouts.
func (b *bench) coalesce(ctx context.Context) error {
	res := &results.Coalesce{Load: results.LoadAvg(), Changes: b.cfg.Coalesce, GapMS: stats.MS(b.cfg.CoalesceGap)}
	b.res.Coalesce = res
	if err := b.phase("coalesce"); err != nil {
		return err
	}
	g := b.alloc.take(1)[0]
	use := b.layout.Uses(g)[1]
	key := b.layout.Deployment(g).String()
	begin := time.Now()
	for i := range b.cfg.Coalesce {
		time.Sleep(time.Until(begin.Add(time.Duration(i) * b.cfg.CoalesceGap)))
		if _, _, err := b.changer.Change(ctx, use.Source); err != nil {
			return err
		}
	}
	if err := b.settle(ctx, b.cfg.Window+b.cfg.Settle); err != nil {
		return err
	}
	for _, r := range b.rollouts(begin, time.Now()) {
		if r.Key == key {
			res.Rollouts++
			res.RolloutSeconds = append(res.RolloutSeconds, stats.Seconds(r.At.Sub(begin)))
		} else {
			res.OtherRollouts++
		}
	}
	logf("Coalescing: %d rollouts from %d changes %v apart, at %v s", res.Rollouts, res.Changes, b.cfg.CoalesceGap, res.RolloutSeconds)
	return nil
}

// settle waits d, failing early if the controller exits.
func (b *bench) settle(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := b.ctrl.Exited(); err != nil {
			return err
		}
		select {
		case <-time.After(min(time.Until(deadline), 200*time.Millisecond)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// unexpected counts the rollouts beyond one of each expected Deployment
// (several changes to sources of one Deployment count once: the scenarios
// never change one Deployment's sources twice, but the coalescing one).
func unexpected(rollouts []watch.Rollout, expected map[string]bool) int {
	seen := map[string]bool{}
	n := 0
	for _, r := range rollouts {
		if expected[r.Key] && !seen[r.Key] {
			seen[r.Key] = true
			continue
		}
		n++
	}
	return n
}
