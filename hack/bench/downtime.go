package main

import (
	"context"
	"time"

	"nudge.dev/nudge/hack/bench/results"
)

// downtime stops the controller, changes cfg.Downtime sources (each used by
// one Deployment) while it is down, restarts it and times from the restart
// until every change has rolled. Nothing else may roll.
func (b *bench) downtime(ctx context.Context) error {
	res := &results.Downtime{Load: results.LoadAvg(), Changes: b.cfg.Downtime}
	b.res.Downtime = res
	last, err := b.stopController()
	if err != nil {
		return err
	}
	b.res.Process = processResult(last)
	if err := b.phase("downtime"); err != nil {
		return err
	}
	begin := time.Now()
	ids := b.alloc.take(b.cfg.Downtime)
	var keys []string
	expected := map[string]bool{}
	for i, g := range ids {
		src := b.layout.Uses(g)[i%4].Source
		for _, k := range b.layout.Users(src) {
			if !expected[k] {
				expected[k] = true
				keys = append(keys, k)
			}
		}
		if _, _, err := b.changer.Change(ctx, src); err != nil {
			return err
		}
	}
	res.Workloads = len(keys)
	if err := b.startController(); err != nil {
		return err
	}
	start := b.ctrl.Started()
	ready := make(chan time.Time, 1)
	go func() { ready <- b.ctrl.WaitReady(ctx, b.cfg.DowntimeWait) }()
	rolled, _ := b.watcher.WaitRolled(ctx, keys, begin, b.cfg.DowntimeWait)
	res.Caught = len(rolled)
	var lastAt time.Time
	for _, at := range rolled {
		lastAt = later(lastAt, at)
	}
	if len(rolled) > 0 {
		res.LastSeconds = ptrSeconds(lastAt.Sub(start))
		if len(rolled) == len(keys) {
			res.AllSeconds = res.LastSeconds
		}
	}
	if at := <-ready; !at.IsZero() {
		res.ReadySeconds = ptrSeconds(at.Sub(start))
	}
	if err := b.settle(ctx, b.cfg.Settle); err != nil {
		return err
	}
	res.OtherRollouts = unexpected(b.rollouts(begin, time.Now()), expected)
	logf("Downtime: %d of %d workloads rolled after the restart, the last %s s after it; %d other rollouts",
		res.Caught, res.Workloads, results.OptSeconds(res.LastSeconds), res.OtherRollouts)
	return nil
}
