package main

import (
	"context"
	"slices"
	"time"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/hack/bench/watch"
)

// sent is one change the stream made.
type sent struct {
	key string // the Deployment (namespace/name) that uses the source
	at  time.Time
}

// steady runs the steady stream (cfg.SteadyRate changes a second over
// cfg.SteadySources sources for cfg.SteadyFor), the steady-restart one
// killing and restarting the controller halfway, as a phase of its own.
func (b *bench) steady(ctx context.Context, restart bool) (*results.Steady, error) {
	name := "steady"
	if restart {
		name = "steady-restart"
	}
	if err := b.phase(name); err != nil {
		return nil, err
	}
	wait := func() {}
	if !restart {
		// The stream and the Events after it, as perUpdate counts them.
		wait = b.prof().cpu(ctx, "cpu-steady.pprof", b.cfg.SteadyFor+versusQuiet)
	}
	res, err := b.stream(ctx, b.cfg.SteadyFor, restart)
	wait()
	if err != nil {
		return nil, err
	}
	if err := b.perUpdate(res.Changes, &res.CPUPerUpdate, &res.RequestsPerUpdate); err != nil {
		return nil, err
	}
	logf("Steady stream (%s): %d changes, p50 %.1f ms, p99 %.1f ms, %d missed, %d doubled, longest gap %.3f s",
		name, res.Changes, res.Latency.P50, res.Latency.P99, res.Missed, res.Doubled, res.GapSeconds)
	return res, nil
}

// stream runs one steady stream of cfg.SteadyRate changes a second over
// cfg.SteadySources sources for d, with restart killing (SIGKILL) and
// starting again the running controller halfway, and matches its rollouts
// to its changes. CPUPerUpdate and RequestsPerUpdate are left to the
// caller.
func (b *bench) stream(ctx context.Context, d time.Duration, restart bool) (*results.Steady, error) {
	res := &results.Steady{Load: results.LoadAvg(), Rate: b.cfg.SteadyRate, Sources: b.cfg.SteadySources,
		Seconds: d.Seconds(), Restart: restart}
	ids := b.alloc.take(b.cfg.SteadySources)
	period := time.Duration(float64(time.Second) / b.cfg.SteadyRate)
	n := int(d / period)
	var changes []sent
	begin := time.Now()
	for i := range n {
		if restart && i == n/2 {
			if err := b.killController(); err != nil {
				return nil, err
			}
			if err := b.startController(); err != nil {
				return nil, err
			}
		}
		time.Sleep(time.Until(begin.Add(time.Duration(i) * period)))
		g := ids[i%len(ids)]
		at, _, err := b.changer.Change(ctx, b.layout.Uses(g)[(i/len(ids))%4].Source)
		if err != nil {
			return nil, err
		}
		changes = append(changes, sent{key: b.layout.Deployment(g).String(), at: at})
	}
	var keys []string
	for _, g := range ids {
		keys = append(keys, b.layout.Deployment(g).String())
	}
	// The last change of each Deployment has no next change to bound it:
	// wait for a rollout of each after the first change of the last round.
	b.watcher.WaitRolled(ctx, keys, changes[max(0, len(changes)-len(ids))].at, b.cfg.ChangeTimeout)
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return nil, err
	}
	res.Changes = len(changes)
	lats, missed, doubled := matchChanges(changes, b.rollouts(begin, time.Now()), b.cfg.ChangeTimeout)
	res.Latency, res.Missed, res.Doubled = stats.NewDistribution(lats), missed, doubled
	res.Samples = lats
	res.GapSeconds = stats.Seconds(longestGap(begin, b.rollouts(begin, time.Now()), keys))
	return res, nil
}

// matchChanges pairs each change with the first rollout of its Deployment
// after it and not after the next change of that Deployment (or within
// timeout, for the last): its latency; a change with none is missed.
// Rollouts of those Deployments matched to no change are doubled. Both
// lists are in time order.
func matchChanges(changes []sent, rollouts []watch.Rollout, timeout time.Duration) (lats []time.Duration, missed, doubled int) {
	byKey := map[string][]time.Time{}
	for _, r := range rollouts {
		byKey[r.Key] = append(byKey[r.Key], r.At)
	}
	perKey := map[string][]time.Time{}
	for _, c := range changes {
		perKey[c.key] = append(perKey[c.key], c.at)
	}
	for key, sends := range perKey {
		rolled, next, used := byKey[key], 0, 0
		for i, at := range sends {
			until := at.Add(timeout)
			if i+1 < len(sends) {
				until = sends[i+1]
			}
			for next < len(rolled) && !rolled[next].After(at) {
				next++
			}
			if next == len(rolled) || rolled[next].After(until) {
				missed++
				continue
			}
			lats = append(lats, rolled[next].Sub(at))
			next++
			used++
		}
		doubled += len(rolled) - used
	}
	return lats, missed, doubled
}

// longestGap returns the longest time from begin with no rollout of keys,
// up to the last of them.
func longestGap(begin time.Time, rollouts []watch.Rollout, keys []string) time.Duration {
	last, gap := begin, time.Duration(0)
	for _, r := range rollouts {
		if !slices.Contains(keys, r.Key) {
			continue
		}
		gap = max(gap, r.At.Sub(last))
		last = r.At
	}
	return gap
}

// perUpdate ends the current phase and sets the controller's CPU
// milliseconds and API requests in it per update, for n updates.
func (b *bench) perUpdate(n int, cpuMS, requests *float64) error {
	if err := b.endPhase(); err != nil {
		return err
	}
	p := b.phases[len(b.phases)-1]
	*cpuMS = stats.Round(p.CPUSeconds*1000/float64(n), 2)
	*requests = stats.Round(float64(p.Requests.Total())/float64(n), 3)
	return nil
}

// killController kills the running controller with SIGKILL, as a crash or an
// evicted pod would end it, first adding its CPU time to the offset.
func (b *bench) killController() error {
	s, err := b.ctrl.Stats()
	if err != nil {
		return err
	}
	b.cpuOffset += s.CPUSeconds
	if b.res.Process == nil {
		b.res.Process = processResult(s)
	}
	return b.ctrl.Kill()
}
