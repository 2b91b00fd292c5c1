package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"
)

// RestartResult is one controller of -restart-cmd, started after the
// scenarios over the same cluster (its workloads already baselined) and
// left idle for -idle once its probe rolled: its memory then, and its
// peak since start.
type RestartResult struct {
	Name          string   `json:"name"`
	Cmd           string   `json:"cmd"`
	Load          Load     `json:"load"`
	SyncedSeconds *float64 `json:"synced_seconds"` // the probe rolled, from start
	RSSMiB        float64  `json:"rss_mib"`
	AnonRSSMiB    float64  `json:"anon_rss_mib"`
	PeakRSSMiB    float64  `json:"peak_rss_mib"`
	// With -cgroup: the working set (usage minus inactive file pages) at
	// the end of idle and its peak since start, and the active file
	// pages it counts.
	WorkingSetMiB     *float64 `json:"working_set_mib,omitempty"`
	PeakWorkingSetMiB *float64 `json:"peak_working_set_mib,omitempty"`
	ActiveFileMiB     *float64 `json:"active_file_mib,omitempty"`
	CPUSeconds        float64  `json:"cpu_seconds"` // from start to the end of idle
}

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
func (b *bench) restartOne(ctx context.Context, i int, cmd string) (RestartResult, error) {
	r := RestartResult{Name: strings.Fields(cmd)[0], Cmd: cmd, Load: loadAvg()}
	r.Name = r.Name[strings.LastIndex(r.Name, "/")+1:]
	if err := b.phase(fmt.Sprintf("restart %d: %s", i+1, r.Name)); err != nil {
		return r, err
	}
	if err := b.startLogged(cmd, fmt.Sprintf("restart-%d.log", i+1), true); err != nil {
		return r, err
	}
	probed, err := b.probe(ctx, b.ctrl.started.Add(b.cfg.SyncTimeout))
	if err != nil {
		return r, err
	}
	if probed.IsZero() {
		return r, fmt.Errorf("the controller did not roll the probe within %v", b.cfg.SyncTimeout)
	}
	r.SyncedSeconds = ptrSeconds(probed.Sub(b.ctrl.started))
	select {
	case <-time.After(b.cfg.Idle):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	s, err := b.ctrl.Stats()
	if err != nil {
		return r, err
	}
	r.RSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.CPUSeconds = mib(s.RSSBytes), mib(s.AnonBytes), mib(s.PeakBytes), round(s.CPUSeconds, 2)
	if m := s.Cgroup; m != nil {
		r.WorkingSetMiB, r.ActiveFileMiB = ptr.To(mib(m.WorkingSet())), ptr.To(mib(m.ActiveFile))
		r.PeakWorkingSetMiB = ptr.To(mib(s.PeakWorkingSetBytes))
	}
	logf("Restart %d (%s): synced in %.1f s; RSS %.1f MiB (anonymous %.1f), peak %.1f%s", i+1, r.Name,
		*r.SyncedSeconds, r.RSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.workingSet())
	return r, nil
}

// workingSet is ", working set … (active file …), peak …" in MiB, or ""
// without -cgroup.
func (r RestartResult) workingSet() string {
	if r.WorkingSetMiB == nil {
		return ""
	}
	return fmt.Sprintf("; working set %.1f MiB (active file %.1f), peak %.1f", *r.WorkingSetMiB, *r.ActiveFileMiB, *r.PeakWorkingSetMiB)
}
