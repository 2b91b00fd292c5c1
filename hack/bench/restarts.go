package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// restarts stops the controller and runs each of -restart-cmd in turn, one
// at a time, each measured as restartOne says.
func (b *bench) restarts(ctx context.Context) error {
	for i, cmd := range b.cfg.RestartCmds {
		if _, err := b.stopController(); err != nil {
			return err
		}
		r, err := b.restartOne(ctx, i, cmd)
		if err != nil {
			return fmt.Errorf("restart %d (%s): %w", i+1, cmd, err)
		}
		b.res.Restarts = append(b.res.Restarts, r)
	}
	return nil
}

// restartOne starts cmd (logging to restart-N.log), waits until a change of
// the probe ConfigMap rolls the probe Deployment, leaves it idle for -idle
// and takes its memory.
func (b *bench) restartOne(ctx context.Context, i int, cmd string) (results.Restart, error) {
	r := results.Restart{Name: strings.Fields(cmd)[0], Cmd: cmd, Load: results.LoadAvg()}
	r.Name = r.Name[strings.LastIndex(r.Name, "/")+1:]
	if err := b.phase(fmt.Sprintf("restart %d: %s", i+1, r.Name)); err != nil {
		return r, err
	}
	if err := b.startLogged(cmd, fmt.Sprintf("restart-%d.log", i+1), true); err != nil {
		return r, err
	}
	probed, err := b.probe(ctx, b.ctrl.Started().Add(b.cfg.SyncTimeout))
	if err != nil {
		return r, err
	}
	if probed.IsZero() {
		return r, fmt.Errorf("the controller did not roll the probe within %v", b.cfg.SyncTimeout)
	}
	r.SyncedSeconds = ptrSeconds(probed.Sub(b.ctrl.Started()))
	select {
	case <-time.After(b.cfg.Idle):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	s, err := b.ctrl.Stats()
	if err != nil {
		return r, err
	}
	r.RSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.CPUSeconds = stats.MiB(s.RSSBytes), stats.MiB(s.AnonBytes), stats.MiB(s.PeakBytes), stats.Round(s.CPUSeconds, 2)
	if m := s.Cgroup; m != nil {
		r.WorkingSetMiB, r.ActiveFileMiB = ptr.To(stats.MiB(m.WorkingSet())), ptr.To(stats.MiB(m.ActiveFile))
		r.PeakWorkingSetMiB = ptr.To(stats.MiB(s.PeakWorkingSetBytes))
	}
	logf("Restart %d (%s): synced in %.1f s; RSS %.1f MiB (anonymous %.1f), peak %.1f%s", i+1, r.Name,
		*r.SyncedSeconds, r.RSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.WorkingSet())
	return r, nil
}
