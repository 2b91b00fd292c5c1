package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"nudge.dev/nudge/internal/shard"
)

// ShardsResult is the shards scenario (-shards N): the single controller's
// idle figures, then N controllers over the same cluster, each with
// --shard set to one of N ranges cut at the population namespaces' hash
// quantiles (shard.Balanced: the bench's namespaces, bench-000, bench-001,
// ..., differ in their last characters alone, which equal ranges split
// unevenly), and a round of changes each rolled exactly once.
type ShardsResult struct {
	Load Load `json:"load"`
	// Gate says whether kube-apiserver ran with ShardedListAndWatch.
	Gate bool `json:"gate"`
	// Single is the unsharded controller, measured as the shards are: its
	// memory over a window of -memory-window once quiet and idle, and the
	// bytes it received from the API server until the end of its idle
	// phase (through the benchmark's counting proxy).
	Single ShardFigures   `json:"single"`
	Shards []ShardFigures `json:"shards"`
	// MaxRSSRatio is the largest shard's RSS over the single controller's,
	// each the maximum of its window (MedianRSSRatio the same of the
	// medians, MaxAnonRatio of the anonymous parts' maxima); MaxBytesRatio
	// is the same of the bytes received.
	MaxRSSRatio    float64 `json:"max_rss_ratio"`
	MedianRSSRatio float64 `json:"median_rss_ratio"`
	MaxAnonRatio   float64 `json:"max_anon_ratio"`
	MaxBytesRatio  float64 `json:"max_bytes_ratio"`
	// QuietSeconds is the time from the last shard ready until every
	// shard's CPU was quiet (its first reconcile of every workload done).
	QuietSeconds float64 `json:"quiet_seconds"`
	Changes      int     `json:"changes"`
	// Late are Deployments using a changed source that did not roll within
	// -change-timeout; Misses those that did not roll within -wait-timeout.
	Late          int `json:"late"`
	Misses        int `json:"misses"`
	OtherRollouts int `json:"other_rollouts"` // a second rollout of such a Deployment, or one of another
}

// ShardFigures are one controller's figures in the shards scenario.
type ShardFigures struct {
	Shard        string   `json:"shard,omitempty"` // its --shard range
	Namespaces   int      `json:"namespaces"`      // population namespaces it owns
	ReadySeconds *float64 `json:"ready_seconds,omitempty"`
	// RSSMiB is the maximum of Memory's RSS samples; PeakRSSMiB the peak
	// since start (VmHWM) at the window's end.
	RSSMiB      float64      `json:"rss_mib"`
	PeakRSSMiB  float64      `json:"peak_rss_mib"`
	Memory      MemoryWindow `json:"memory"`
	ReceivedMiB float64      `json:"received_mib"` // from the API server, start to idle end
}

// measure sets f's memory figures from w and the process's peak.
func (f *ShardFigures) measure(w MemoryWindow, peak int64) {
	f.Memory, f.RSSMiB, f.PeakRSSMiB = w, w.RSS.Max, mib(peak)
}

// shards samples the single controller's memory over cfg.MemoryWindow
// once it is quiet (after its idle phase), stops it, then starts cfg.Shards
// controllers over the same cluster, waits until each is ready, quiet and
// has idled cfg.Idle, samples theirs over the same window, changes
// cfg.ShardChanges sources and counts the rollouts: each Deployment using a
// changed source must roll exactly once, by its shard. The ratios compare
// the same statistic of every process's window.
func (b *bench) shards(ctx context.Context) error {
	res := &ShardsResult{Load: loadAvg(), Gate: b.cfg.ShardGate}
	b.res.Shards = res
	if err := b.phase("shards"); err != nil {
		return err
	}
	res.Single = ShardFigures{Namespaces: b.cfg.Namespaces, ReceivedMiB: mib(b.idleReceived)}
	if b.res.Sync != nil {
		res.Single.ReadySeconds = b.res.Sync.ReadySeconds
	}
	if err := b.sampleIdle(ctx, []*Controller{b.ctrl}, []*ShardFigures{&res.Single}); err != nil {
		return err
	}
	logf("Single controller: %v", res.Single.Memory)
	if _, err := b.stopController(); err != nil {
		return err
	}

	names := []string{systemNamespace, probeNamespace, fanoutNamespace}
	for i := range b.cfg.Namespaces {
		names = append(names, b.layout.Namespace(i))
	}
	ranges, err := shard.Balanced(names, b.cfg.Shards)
	if err != nil {
		return err
	}
	ctrls := make([]*Controller, len(ranges))
	proxies := make([]*countingProxy, len(ranges))
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
	}()
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
		if ctrls[i], err = startController(cmd, kubeconfig, filepath.Join(b.workDir, fmt.Sprintf("shard-%d.log", i)), nil); err != nil {
			return err
		}
	}
	for i, c := range ctrls {
		f := ShardFigures{Shard: ranges[i].Name}
		for j := range b.cfg.Namespaces {
			if ranges[i].Owns(b.layout.Namespace(j)) {
				f.Namespaces++
			}
		}
		at := c.WaitReady(ctx, b.cfg.SyncTimeout)
		if at.IsZero() {
			return fmt.Errorf("shard %s not ready within %v: %w", ranges[i].Name, b.cfg.SyncTimeout, c.Exited())
		}
		f.ReadySeconds = ptrSeconds(at.Sub(c.started))
		res.Shards = append(res.Shards, f)
	}
	// Ready is synced caches; each shard then reconciles every workload
	// of its namespaces once (baselined already: nothing to write). Wait
	// until every shard is quiet, then cfg.Idle (as the single controller
	// idled), then sample.
	quiet, err := waitQuiet(ctx, ctrls, b.cfg.SyncTimeout)
	if err != nil {
		return err
	}
	res.QuietSeconds = seconds(quiet)
	select {
	case <-time.After(b.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	figures := make([]*ShardFigures, len(ctrls))
	for i := range ctrls {
		res.Shards[i].ReceivedMiB = mib(proxies[i].Received())
		figures[i] = &res.Shards[i]
	}
	if err := b.sampleIdle(ctx, ctrls, figures); err != nil {
		return err
	}
	single := res.Single.Memory
	for _, f := range res.Shards {
		res.MaxRSSRatio = max(res.MaxRSSRatio, ratio(f.Memory.RSS.Max, single.RSS.Max))
		res.MedianRSSRatio = max(res.MedianRSSRatio, ratio(f.Memory.RSS.Median, single.RSS.Median))
		res.MaxAnonRatio = max(res.MaxAnonRatio, ratio(f.Memory.Anon.Max, single.Anon.Max))
		res.MaxBytesRatio = max(res.MaxBytesRatio, ratio(f.ReceivedMiB, res.Single.ReceivedMiB))
		logf("Shard %s: %d namespaces, ready in %.2f s, %v (peak %.1f), received %.1f MiB",
			f.Shard, f.Namespaces, *f.ReadySeconds, f.Memory, f.PeakRSSMiB, f.ReceivedMiB)
	}

	begin := time.Now()
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
	logf("Shards: largest RSS %.2f× the single controller's (maxima over %v; medians %.2f×, anonymous maxima %.2f×), bytes received %.2f×; %d changes, %d late, %d misses, %d other rollouts",
		res.MaxRSSRatio, b.cfg.MemoryWindow, res.MedianRSSRatio, res.MaxAnonRatio, res.MaxBytesRatio, res.Changes, res.Late, res.Misses, res.OtherRollouts)
	return nil
}

// sampleIdle waits until every one of ctrls is quiet, samples their memory
// over cfg.MemoryWindow and sets each one's figures.
func (b *bench) sampleIdle(ctx context.Context, ctrls []*Controller, figures []*ShardFigures) error {
	if _, err := waitQuiet(ctx, ctrls, b.cfg.SyncTimeout); err != nil {
		return err
	}
	windows, err := sampleMemory(ctx, ctrls, b.cfg.MemoryWindow)
	if err != nil {
		return err
	}
	for i, c := range ctrls {
		s, err := c.Stats()
		if err != nil {
			return err
		}
		figures[i].measure(windows[i], s.PeakBytes)
	}
	return nil
}

// ratio returns a / b to three digits, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(a/b, 3)
}

// waitQuiet returns once every controller of ctrls used less than 50 ms of
// CPU in a second, with the time that took; an error after timeout or when
// one exits.
func waitQuiet(ctx context.Context, ctrls []*Controller, timeout time.Duration) (time.Duration, error) {
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
