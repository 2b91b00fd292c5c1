package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/cgroup"
	"nudge.dev/nudge/hack/bench/plane"
	"nudge.dev/nudge/hack/bench/process"
	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/internal/shard"
)

// shards samples the single controller's memory over cfg.MemoryWindow
// once it is quiet (after its idle phase), stops it, then starts cfg.Shards
// controllers over the same cluster (on the freshly populated cluster with
// cfg.ShardsOnly), waits until each is ready, every workload is baselined,
// every shard is quiet and has idled cfg.Idle, samples their memory and the
// plane's over the same window, changes cfg.ShardChanges sources and counts
// the rollouts: none before the changes, and each Deployment using a
// changed source must roll exactly once, by its shard. The ratios compare
// the same statistic of every process's window.
func (b *bench) shards(ctx context.Context) error {
	res := &results.Shards{Load: results.LoadAvg(), Gate: b.cfg.ShardGate, ShardsOnly: b.cfg.ShardsOnly, Workloads: b.res.Population.Deployments}
	b.res.Shards = res
	if err := b.phase("shards"); err != nil {
		return err
	}
	if !b.cfg.ShardsOnly {
		res.Single = results.ShardFigures{Namespaces: b.cfg.Namespaces, ReceivedMiB: stats.MiB(b.idleReceived)}
		if b.res.Sync != nil {
			res.Single.ReadySeconds = b.res.Sync.ReadySeconds
		}
		if err := b.sampleIdle(ctx, []*process.Controller{b.ctrl}, []*results.ShardFigures{&res.Single}, false); err != nil {
			return err
		}
		logf("Single controller: %v", res.Single.Memory)
		if _, err := b.stopController(); err != nil {
			return err
		}
	}

	names := []string{systemNamespace, probeNamespace, fanoutNamespace}
	for i := range b.cfg.Namespaces {
		names = append(names, b.layout.Namespace(i))
	}
	ranges, err := shard.Balanced(names, b.cfg.Shards)
	if err != nil {
		return err
	}
	owned := b.ownedWorkloads(ranges)
	ctrls := make([]*process.Controller, len(ranges))
	proxies := make([]*countingProxy, len(ranges))
	var binaries []string // the shards' own copies of the binary (-cgroup)
	defer func() {
		for _, c := range ctrls {
			if c != nil {
				_ = c.Stop(stopGrace)
			}
		}
		for _, p := range proxies {
			if p != nil {
				p.Close()
			}
		}
		for _, bin := range binaries {
			_ = os.Remove(bin)
		}
	}()
	start := time.Now()
	deadline := start.Add(b.cfg.SyncTimeout)
	for i, r := range ranges {
		if proxies[i], err = newCountingProxy(b.apiHost); err != nil {
			return err
		}
		kubeconfig := filepath.Join(b.workDir, fmt.Sprintf("shard-%d.kubeconfig", i))
		cfg := rest.CopyConfig(b.userConfig)
		cfg.Host = "https://" + proxies[i].Addr()
		if err := writeKubeconfig(kubeconfig, b.cfg.ControllerUser, cfg); err != nil {
			return err
		}
		cmd := b.cfg.ControllerCmd + " --shard=" + r.Name
		var group *cgroup.Group
		if b.cfg.Cgroup != "" {
			bin := ""
			if cmd, bin, err = ownBinary(cmd, filepath.Join(b.workDir, fmt.Sprintf("shard-%d", i))); err != nil {
				return err
			}
			if bin != "" {
				binaries = append(binaries, bin)
			}
			b.cgroups++
			if group, err = cgroup.New(b.cfg.Cgroup, fmt.Sprintf("nudge-bench-%d-%d-shard-%d", os.Getpid(), b.cgroups, i)); err != nil {
				return err
			}
		}
		if ctrls[i], err = process.Start(cmd, kubeconfig, filepath.Join(b.workDir, fmt.Sprintf("shard-%d.log", i)), group); err != nil {
			return errors.Join(err, group.RemoveIfAny())
		}
	}
	// Every shard's /readyz is polled at once, so that each one's time is
	// its own, not when the poll of the shard before it ended.
	readyAt := make([]time.Time, len(ctrls))
	var ready sync.WaitGroup
	for i, c := range ctrls {
		ready.Go(func() { readyAt[i] = c.WaitReady(ctx, time.Until(deadline)) })
	}
	ready.Wait()
	for i, c := range ctrls {
		f := results.ShardFigures{Shard: ranges[i].Name, Workloads: len(owned[i])}
		for j := range b.cfg.Namespaces {
			if ranges[i].Owns(b.layout.Namespace(j)) {
				f.Namespaces++
			}
		}
		at := readyAt[i]
		if at.IsZero() {
			return fmt.Errorf("shard %s not ready within %v: %w", ranges[i].Name, b.cfg.SyncTimeout, c.Exited())
		}
		f.ReadySeconds = ptrSeconds(at.Sub(c.Started()))
		res.Shards = append(res.Shards, f)
		logf("Shard %s ready in %.1f s (%d namespaces, %d workloads)", f.Shard, *f.ReadySeconds, f.Namespaces, f.Workloads)
	}
	// Ready is synced caches; each shard then reconciles every workload
	// of its namespaces once, writing its first-sight baseline with
	// -shards-only (nothing to write after the single controller). Wait
	// until every workload is baselined and every shard is quiet, then
	// cfg.Idle (as the single controller idled), then sample.
	if b.cfg.BaselineAnnotation != "" {
		stop := b.logBaselines(res.Workloads)
		n, last := b.watcher.WaitBaselined(ctx, res.Workloads, time.Until(deadline))
		stop()
		if res.Baselined = n; n < res.Workloads {
			return fmt.Errorf("%d of %d workloads baselined within %v of the shards' start", n, res.Workloads, b.cfg.SyncTimeout)
		}
		if b.cfg.ShardsOnly {
			res.BaselinedSeconds = ptrSeconds(last.Sub(start))
			for i, c := range ctrls {
				if _, last := b.watcher.BaselinedAt(owned[i]); !last.IsZero() {
					res.Shards[i].BaselinedSeconds = ptrSeconds(last.Sub(c.Started()))
				}
			}
		}
		logf("Shards: %d of %d workloads baselined", n, res.Workloads)
	}
	quiet, err := waitQuiet(ctx, ctrls, time.Until(deadline))
	if err != nil {
		return err
	}
	res.QuietSeconds = stats.Seconds(quiet)
	if m := b.monitor; m != nil {
		for i, p := range m.Procs {
			b.res.Plane.Process(p.Name).StartPeakMiB = ptr.To(m.Peak(i, start, time.Now()))
		}
	}
	select {
	case <-time.After(b.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	figures := make([]*results.ShardFigures, len(ctrls))
	for i := range ctrls {
		res.Shards[i].ReceivedMiB = stats.MiB(proxies[i].Received())
		figures[i] = &res.Shards[i]
	}
	if err := b.sampleIdle(ctx, ctrls, figures, true); err != nil {
		return err
	}
	if b.res.Plane != nil {
		if live, err := plane.APIServerLiveHeap(ctx, b.cs.CoreV1().RESTClient(), true); err != nil {
			logf("Plane: %v", err)
		} else {
			b.res.Plane.APIServer.LiveHeapMiB = ptr.To(stats.MiB(live))
			logf("Plane: kube-apiserver's live heap %.1f MiB after a forced collection", stats.MiB(live))
		}
	}
	single := res.Single.Memory
	for _, f := range res.Shards {
		if !b.cfg.ShardsOnly {
			res.MaxRSSRatio = max(res.MaxRSSRatio, ratio(f.Memory.RSS.Max, single.RSS.Max))
			res.MedianRSSRatio = max(res.MedianRSSRatio, ratio(f.Memory.RSS.Median, single.RSS.Median))
			res.MaxAnonRatio = max(res.MaxAnonRatio, ratio(f.Memory.Anon.Max, single.Anon.Max))
			res.MaxBytesRatio = max(res.MaxBytesRatio, ratio(f.ReceivedMiB, res.Single.ReceivedMiB))
		}
		logf("Shard %s: %d namespaces, %d workloads, ready in %s s, baselined in %s s, %v (peak RSS %.1f%s), CPU %.1f s, received %.1f MiB",
			f.Shard, f.Namespaces, f.Workloads, results.OptSeconds(f.ReadySeconds), results.OptSeconds(f.BaselinedSeconds), f.Memory, f.PeakRSSMiB,
			optMiB(", peak working set ", f.PeakWorkingSetMiB), f.CPUSeconds, f.ReceivedMiB)
	}

	begin := time.Now()
	res.StartRollouts = len(b.rollouts(start, begin))
	expected := map[string]bool{}
	res.Changes = b.cfg.ShardChanges
	for _, g := range b.alloc.take(b.cfg.ShardChanges) {
		use := b.layout.Uses(g)[0]
		users := b.layout.Users(use.Source)
		for _, k := range users {
			expected[k] = true
		}
		sent, _, err := b.changer.Change(ctx, use.Source)
		if err != nil {
			return err
		}
		if _, missing := b.watcher.WaitRolled(ctx, users, sent, b.cfg.ChangeTimeout); len(missing) > 0 {
			res.Late += len(missing)
			logf("Late: %v did not roll within %v of a change of %s", missing, b.cfg.ChangeTimeout, use.Source)
		}
	}
	var keys []string
	for k := range expected {
		keys = append(keys, k)
	}
	_, missing := b.watcher.WaitRolled(ctx, keys, begin, b.cfg.WaitTimeout)
	res.Misses = len(missing)
	time.Sleep(b.cfg.Settle)
	res.OtherRollouts = unexpected(b.rollouts(begin, time.Now()), expected)
	for _, c := range ctrls {
		if err := c.Exited(); err != nil {
			return err
		}
	}
	if !b.cfg.ShardsOnly {
		logf("Shards: largest RSS %.2f× the single controller's (maxima over %v; medians %.2f×, anonymous maxima %.2f×), bytes received %.2f×",
			res.MaxRSSRatio, b.cfg.MemoryWindow, res.MedianRSSRatio, res.MaxAnonRatio, res.MaxBytesRatio)
	}
	logf("Shards: %d rollouts at their start; %d changes, %d late, %d misses, %d other rollouts",
		res.StartRollouts, res.Changes, res.Late, res.Misses, res.OtherRollouts)
	return nil
}

// logBaselines logs how many of n workloads carry the baseline annotation
// every plane.LogEvery until the returned function is called.
func (b *bench) logBaselines(n int) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(plane.LogEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				got, _ := b.watcher.Baselined()
				logf("Shards: %d of %d workloads baselined", got, n)
			}
		}
	}()
	return func() { close(done) }
}

// ownedWorkloads returns the Deployments (namespace/name) in the
// namespaces of each of ranges: the population's, the probe and the
// fan-out's.
func (b *bench) ownedWorkloads(ranges []shard.Shard) [][]string {
	owner := map[string]int{}
	of := func(namespace string) int {
		i, ok := owner[namespace]
		if !ok {
			i = -1
			for j, r := range ranges {
				if r.Owns(namespace) {
					i = j
					break
				}
			}
			owner[namespace] = i
		}
		return i
	}
	out := make([][]string, len(ranges))
	add := func(namespace, name string) {
		if i := of(namespace); i >= 0 {
			out[i] = append(out[i], namespace+"/"+name)
		}
	}
	add(probeNamespace, probeName)
	for i := range b.cfg.FanOut {
		d := b.layout.FanOutDeployment(i)
		add(d.Namespace, d.Name)
	}
	for g := range b.cfg.Deployments {
		d := b.layout.Deployment(g)
		add(d.Namespace, d.Name)
	}
	return out
}

// ownBinary copies the binary that cmdline runs (its first word, when it
// is a path; the benchmark splits command lines at spaces) into dir and
// returns cmdline running the copy, and the copy's path; cmdline and ""
// when the first word is no path. The copy is
// dropped from the page cache (see cgroup.DropPageCache): each shard then pays
// for its own binary's pages in its cgroup, as a pod on a node of its own
// does, rather than the first shard to touch a page paying for every one
// (a page cache page is charged to the first cgroup that reads it).
func ownBinary(cmdline, dir string) (string, string, error) {
	cmdline = strings.TrimLeft(cmdline, " ")
	first := strings.Fields(cmdline)[0]
	if !strings.Contains(first, "/") {
		return cmdline, "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	copied := filepath.Join(dir, filepath.Base(first))
	if err := copyFile(first, copied); err != nil {
		return "", "", fmt.Errorf("copying the controller's binary: %w", err)
	}
	if err := cgroup.DropPageCache(copied); err != nil {
		return "", "", err
	}
	return copied + cmdline[len(first):], copied, nil
}

// copyFile copies the file at from to a new executable file at to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return errors.Join(err, dst.Close())
	}
	return dst.Close()
}

// sampleIdle waits until every one of ctrls is quiet, samples their memory
// (and the plane's, with withPlane) over cfg.MemoryWindow and sets each one's
// figures (and the plane's idle windows).
func (b *bench) sampleIdle(ctx context.Context, ctrls []*process.Controller, figures []*results.ShardFigures, withPlane bool) error {
	if _, err := waitQuiet(ctx, ctrls, b.cfg.SyncTimeout); err != nil {
		return err
	}
	procs := make([]process.Measured, 0, len(ctrls)+len(plane.ProcNames))
	for _, c := range ctrls {
		procs = append(procs, c)
	}
	if withPlane && b.monitor != nil {
		for _, p := range b.monitor.Procs {
			procs = append(procs, p)
		}
	}
	windows, err := process.SampleMemory(ctx, procs, b.cfg.MemoryWindow)
	if err != nil {
		return err
	}
	for i, c := range ctrls {
		s, err := c.Stats()
		if err != nil {
			return err
		}
		figures[i].Measure(windows[i], s)
	}
	for i := len(ctrls); i < len(procs); i++ {
		p := procs[i].(plane.Proc)
		b.res.Plane.Process(p.Name).Idle = &windows[i]
		logf("Plane, %s: %v", p.Name, windows[i])
	}
	return nil
}

// optMiB returns label followed by *v in MiB, or "" when v is nil.
func optMiB(label string, v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%s%.1f MiB", label, *v)
}

// ratio returns a / b to three digits, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return stats.Round(a/b, 3)
}

// waitQuiet returns once every controller of ctrls used less than 50 ms of
// CPU in a second, with the time that took; an error after timeout or when
// one exits.
func waitQuiet(ctx context.Context, ctrls []*process.Controller, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < timeout {
		before := make([]float64, len(ctrls))
		for i, c := range ctrls {
			s, err := c.Stats()
			if err != nil {
				return 0, err
			}
			before[i] = s.CPUSeconds
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		quiet := true
		for i, c := range ctrls {
			s, err := c.Stats()
			if err != nil {
				return 0, err
			}
			quiet = quiet && s.CPUSeconds-before[i] < 0.05
		}
		if quiet {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("the shards were not quiet within %v", timeout)
}

// countingProxy forwards TCP connections to the API server and counts the
// bytes the API server sends back (TLS included: the controller's whole
// traffic, lists and watches above all).
type countingProxy struct {
	l        net.Listener
	target   string
	received atomic.Int64
	wg       sync.WaitGroup
}

// newCountingProxy listens on a free 127.0.0.1 port and forwards to the
// host of apiHost (https://127.0.0.1:port).
func newCountingProxy(apiHost string) (*countingProxy, error) {
	u, err := url.Parse(apiHost)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the counting proxy: %w", err)
	}
	p := &countingProxy{l: l, target: u.Host}
	p.wg.Go(p.serve)
	return p, nil
}

func (p *countingProxy) Addr() string { return p.l.Addr().String() }

// Received returns the bytes sent back through the proxy so far.
func (p *countingProxy) Received() int64 {
	if p == nil {
		return 0
	}
	return p.received.Load()
}

func (p *countingProxy) serve() {
	for {
		conn, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(conn)
	}
}

func (p *countingProxy) forward(conn net.Conn) {
	defer conn.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, conn)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(countingWriter{conn, &p.received}, up)
		done <- struct{}{}
	}()
	<-done
}

// Close stops accepting; open connections end with their peers.
func (p *countingProxy) Close() {
	if p == nil {
		return
	}
	if err := p.l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		logf("Closing the counting proxy: %v", err)
	}
	p.wg.Wait()
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
