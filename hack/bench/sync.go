package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// probeInterval is how often the probe ConfigMap changes until the controller
// rolls the probe Deployment.
const probeInterval = 250 * time.Millisecond

// sync starts the controller and waits until it is synced: until a change of
// the probe ConfigMap rolls the probe Deployment (which any reloader does
// once its caches have synced) and, when the controller writes a baseline
// annotation at first sight, until every workload carries it.
func (b *bench) sync(ctx context.Context) error {
	res := &results.Sync{Load: results.LoadAvg(), Workloads: b.res.Population.Deployments}
	b.res.Sync = res
	if err := b.phase("sync"); err != nil {
		return err
	}
	if err := b.startController(); err != nil {
		return err
	}
	start := b.ctrl.Started()
	deadline := start.Add(b.cfg.SyncTimeout)
	ready := make(chan time.Time, 1)
	go func() { ready <- b.ctrl.WaitReady(ctx, b.cfg.SyncTimeout) }()
	profiled := b.prof().cpu(ctx, "cpu-sync.pprof", b.cfg.ProfileFor)
	defer profiled()

	probed, err := b.probe(ctx, deadline)
	if err != nil {
		return err
	}
	synced := probed
	if !probed.IsZero() {
		res.ProbeRolledSeconds = ptrSeconds(probed.Sub(start))
		if n, _ := b.watcher.Baselined(); n > 0 {
			n, last := b.watcher.WaitBaselined(ctx, res.Workloads, time.Until(deadline))
			res.BaselinesWritten = n
			if n == res.Workloads {
				res.AllBaselinedSeconds = ptrSeconds(last.Sub(start))
				synced = later(synced, last)
			} else {
				synced = time.Time{}
			}
		}
	}
	if at := <-ready; !at.IsZero() {
		res.ReadySeconds = ptrSeconds(at.Sub(start))
	}
	if synced.IsZero() {
		return fmt.Errorf("the controller did not sync within %v (probe rolled: %v, baselines: %d of %d)",
			b.cfg.SyncTimeout, !probed.IsZero(), res.BaselinesWritten, res.Workloads)
	}
	res.SyncedSeconds = ptrSeconds(synced.Sub(start))
	logf("Synced in %.3f s (probe %.3f s, %d baselines)", *res.SyncedSeconds, *res.ProbeRolledSeconds, res.BaselinesWritten)
	return nil
}

// probe changes the probe ConfigMap every probeInterval until the probe
// Deployment rolls, and returns when it did; the zero time at the deadline.
func (b *bench) probe(ctx context.Context, deadline time.Time) (time.Time, error) {
	use := b.layout.ProbeUse()
	key := probeNamespace + "/" + probeName
	for time.Now().Before(deadline) {
		if err := b.ctrl.Exited(); err != nil {
			return time.Time{}, err
		}
		sent, _, err := b.changer.Change(ctx, use.Source)
		if err != nil {
			return time.Time{}, err
		}
		if rolled, missing := b.watcher.WaitRolled(ctx, []string{key}, sent, probeInterval); len(missing) == 0 {
			return rolled[key], nil
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
	}
	return time.Time{}, nil
}

// idle leaves the synced controller alone for cfg.Idle and takes its memory
// and CPU; it also counts the rollouts since its start (there must be none).
func (b *bench) idle(ctx context.Context) error {
	res := &results.Idle{Load: results.LoadAvg()}
	b.res.Idle = res
	if err := b.phase("idle"); err != nil {
		return err
	}
	before, err := b.ctrl.Stats()
	if err != nil {
		return err
	}
	select {
	case <-time.After(b.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	after, err := b.ctrl.Stats()
	if err != nil {
		return err
	}
	res.Seconds = stats.Seconds(after.At.Sub(before.At))
	res.RSSMiB, res.AnonRSSMiB, res.PeakRSSMiB = stats.MiB(after.RSSBytes), stats.MiB(after.AnonBytes), stats.MiB(after.PeakBytes)
	res.CPUSeconds = stats.Round(after.CPUSeconds, 2)
	res.IdleCPUSeconds = stats.Round(after.CPUSeconds-before.CPUSeconds, 2)
	res.Threads = after.Threads
	if m := after.Cgroup; m != nil {
		res.WorkingSetMiB, res.ActiveFileMiB = ptr.To(stats.MiB(m.WorkingSet())), ptr.To(stats.MiB(m.ActiveFile))
		res.PeakWorkingSetMiB = ptr.To(stats.MiB(after.PeakWorkingSetBytes))
		logf("Idle: working set %.1f MiB (%.1f of it active file pages), peak %.1f MiB, RssAnon %.1f MiB",
			*res.WorkingSetMiB, *res.ActiveFileMiB, *res.PeakWorkingSetMiB, res.AnonRSSMiB)
	}
	b.prof().fetch(ctx, "/heap?gc=1", "heap-idle.pprof", 0)
	// The same in text, with the runtime's memory statistics at its end
	// (HeapInuse, HeapIdle, HeapReleased, StackInuse, ...).
	b.prof().fetch(ctx, "/heap?debug=1", "heap-idle.txt", 0)
	b.res.Sync.FirstStartRollouts = len(b.rollouts(b.ctrl.Started(), time.Now()))
	logf("Idle: RSS %.1f MiB, peak %.1f MiB, CPU %.2f s (%.2f s idle), %d rollouts since start",
		res.RSSMiB, res.PeakRSSMiB, res.CPUSeconds, res.IdleCPUSeconds, b.res.Sync.FirstStartRollouts)
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
