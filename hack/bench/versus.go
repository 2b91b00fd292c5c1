package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/audit"
	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// The floor scenario measures the controller under test against the floor
// controllers in the same run, on the same API server: hack/bench/floor (a
// bare informer that only PATCHes pod templates) for the fan-out, the burst
// and the latency, and an in-process server-side applier of the bound field
// (hack/bench/applyfloor's loop) for the value-binding fan-out. The two take
// turns in rounds, in the order ABBA (the controller under test first in
// even rounds), so that a slow stretch of the shared machine falls on both;
// only one of them runs at a time.

// versus runs the floor scenario.
func (b *bench) versus(ctx context.Context) error {
	res := &results.Versus{Rounds: b.cfg.FloorRounds, FloorCmd: b.cfg.FloorCmd,
		Workloads: results.VersusWorkloads{FanOut: b.cfg.FanOut, Burst: b.cfg.Burst, Latency: b.cfg.FloorLatency}}
	b.res.Versus = res
	if b.res.Process == nil { // the end figures are the controller's, not the floor's
		s, err := b.ctrl.Stats()
		if err != nil {
			return err
		}
		b.res.Process = processResult(s)
	}
	bindings := b.harbors != nil && b.cfg.BindingFanOut > 0
	var harbors, floorHarbors []string
	if bindings {
		harbors = make([]string, b.cfg.BindingFanOut)
		floorHarbors = make([]string, b.cfg.BindingFanOut)
		var objs []creation
		for i := range harbors {
			harbors[i], floorHarbors[i] = fanOutHarbor(i), applyFloorHarbor(i)
			objs = append(objs, creation{gvr: harborGVR, obj: harborObject(floorHarbors[i])})
		}
		if err := createDynamic(ctx, b.dyn, b.cfg.Creators, objs); err != nil {
			return err
		}
	}
	for round := range b.cfg.FloorRounds {
		sides := []bool{false, true} // floor?
		if round%2 == 1 {
			sides = []bool{true, false}
		}
		for _, floor := range sides {
			side, name := &res.Controller, b.cfg.ControllerName
			if floor {
				side, name = &res.Floor, "floor"
			}
			if err := b.turnTo(ctx, floor); err != nil {
				return err
			}
			if err := b.phase(fmt.Sprintf("versus-%d-%s", round+1, name)); err != nil {
				return err
			}
			if err := b.versusTurn(ctx, side, round, floor, harbors, floorHarbors); err != nil {
				return fmt.Errorf("round %d, %s: %w", round+1, name, err)
			}
		}
	}
	if err := b.endPhase(); err != nil {
		return err
	}
	for _, s := range []*results.VersusSide{&res.Controller, &res.Floor} {
		s.Latency = stats.NewDistribution(s.LatencySamples)
		s.Steady = stats.NewDistribution(s.SteadySamples)
	}
	res.Ratios = versusRatios(res)
	for _, r := range res.Ratios {
		target := fmt.Sprintf("target ≤ %.2f ×", r.Target)
		if r.Target == 0 {
			target = "reported"
		}
		logf("Against the floor: %s %.2f × (median of the rounds' ratios, %.2f–%.2f; sides %.3f / %.3f %s; %s)", r.Figure, r.Ratio, r.Low, r.High, r.Controller, r.Floor, r.Unit, target)
	}
	return nil
}

// versusQuiet is how long the controller must have written no Event before
// a figure of the floor scenario, counted from the end of the figure before
// at the earliest. It is longer than the pause in workload writes nudge
// waits for before it writes the Events of its rollouts (1 s, eventsQuiet
// in internal/record): with a second, the wait could end just before those
// Events began, and they were written during the next figure (100 Events
// among the 1,000 applies of a value-binding fan-out, 26 Nov 2026).
const versusQuiet = 2 * time.Second

// versusTurn measures one side once: the fan-out, the burst, the latency of
// cfg.FloorLatency changes, with bindings the value-binding fan-out, and
// with cfg.FloorStreamFor the two steady streams.
// Before each figure it waits until the controller has written no Event for
// versusQuiet: the Events of the figure before (one per rollout, written at
// the recorder's pace once the rollouts pause) are that figure's cost,
// counted in the phase's requests, not the next figure's. Both sides wait
// alike.
func (b *bench) versusTurn(ctx context.Context, side *results.VersusSide, round int, floor bool, harbors, floorHarbors []string) error {
	quiet := func() error {
		_, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout)
		return err
	}
	// Each figure's CPU is taken from before it to after the quiet that
	// follows it: its own work and its Events.
	if err := quiet(); err != nil {
		return err
	}
	from, start := time.Now(), b.cpu()
	fan := &results.Many{Load: results.LoadAvg(), Changes: 1, Workloads: b.cfg.FanOut}
	if err := b.changeFanOut(ctx, fan); err != nil {
		return err
	}
	side.FanOutSeconds = append(side.FanOutSeconds, fan.AllSeconds)
	if err := quiet(); err != nil {
		return err
	}
	side.FanOutCPU = append(side.FanOutCPU, b.cpuSince(start))
	if err := b.requestsSince(from, b.cfg.FanOut, &side.FanOutRequests); err != nil {
		return err
	}
	from, start = time.Now(), b.cpu()
	burst := &results.Many{Load: results.LoadAvg(), Changes: b.cfg.Burst}
	if err := b.changeBurst(ctx, burst); err != nil {
		return err
	}
	side.BurstSeconds = append(side.BurstSeconds, burst.AllSeconds)
	if err := quiet(); err != nil {
		return err
	}
	side.BurstCPU = append(side.BurstCPU, b.cpuSince(start))
	if err := b.requestsSince(from, b.cfg.Burst, &side.BurstRequests); err != nil {
		return err
	}
	from, start = time.Now(), b.cpu()
	c, err := b.changeEach(ctx, b.alloc.take(b.cfg.FloorLatency))
	if err != nil {
		return err
	}
	if err := quiet(); err != nil {
		return err
	}
	side.LatencyCPU = append(side.LatencyCPU, b.cpuSince(start))
	if err := b.requestsSince(from, b.cfg.FloorLatency, &side.LatencyRequests); err != nil {
		return err
	}
	side.LatencySamples = append(side.LatencySamples, c.lats...)
	side.LatencyRounds = append(side.LatencyRounds, stats.NewDistribution(c.lats))
	logf("Versus: slowest changes of the turn: %s", strings.Join(c.slowest(5), ", "))
	side.LatencyMisses += c.misses
	if harbors != nil {
		if err := b.versusBindings(ctx, side, round, floor, harbors, floorHarbors); err != nil {
			return err
		}
	}
	if b.cfg.FloorStreamFor == 0 {
		return nil
	}
	return b.versusStreams(ctx, side)
}

// versusBindings measures one side's value-binding fan-out: the
// controller's, through the shared Secret bound into harbors, or the apply
// floor's, applying the value to floorHarbors.
func (b *bench) versusBindings(ctx context.Context, side *results.VersusSide, round int, floor bool, harbors, floorHarbors []string) error {
	value := fmt.Sprintf("AKIAVERSUS%02d%s", round, map[bool]string{true: "FLOOR", false: "CTRL"}[floor])
	f := &results.Many{Changes: 1, Workloads: len(harbors)}
	if floor {
		sent := time.Now()
		if err := b.applyFloor(ctx, floorHarbors, value); err != nil {
			return err
		}
		seen, missing := b.harbors.wait(ctx, floorHarbors, value, sent, b.cfg.WaitTimeout)
		fill(f, seen, missing, sent)
		logf("Apply floor: %d of %d Harbors updated, last %s s after the first apply", f.Rolled, len(floorHarbors), results.OptSeconds(f.LastSeconds))
		side.BindingFanOutSeconds = append(side.BindingFanOutSeconds, f.AllSeconds)
		return nil
	}
	before := b.statuses.fingerprints()
	sent, err := b.rotateShared(ctx, f, harbors, value)
	if err != nil {
		return err
	}
	side.BindingFanOutSeconds = append(side.BindingFanOutSeconds, f.AllSeconds)
	took, err := b.statuses.recorded(ctx, harbors, before, sent, b.cfg.WaitTimeout)
	if err != nil {
		return err
	}
	side.BindingStatusSeconds = append(side.BindingStatusSeconds, ptrSeconds(took))
	logf("Binding fan-out: every status recorded %.3f s after the change", took.Seconds())
	return nil
}

// versusStreams measures one side's steady stream and then its stream
// killed (SIGKILL) and restarted halfway, each cfg.FloorStreamFor long,
// after the controller's Events went quiet. The steady stream's CPU and
// requests per change are counted until its Events went quiet again.
func (b *bench) versusStreams(ctx context.Context, side *results.VersusSide) error {
	if _, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout); err != nil {
		return err
	}
	from, cpu := time.Now(), b.cpu()
	s, err := b.stream(ctx, b.cfg.FloorStreamFor, false)
	if err != nil {
		return err
	}
	if _, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout); err != nil {
		return err
	}
	if err := b.audit.Read(); err != nil {
		return err
	}
	perUpdate := func(v float64) *float64 { return ptr.To(stats.Round(v/float64(s.Changes), 3)) }
	side.SteadyCPUPerUpdate = append(side.SteadyCPUPerUpdate, perUpdate((b.cpu()-cpu)*1000))
	side.SteadyRequestsPerUpdate = append(side.SteadyRequestsPerUpdate, perUpdate(float64(audit.Count(b.audit.Between(from, time.Now())).Total())))
	side.SteadyRounds = append(side.SteadyRounds, s.Latency)
	side.SteadySamples = append(side.SteadySamples, s.Samples...)
	side.SteadyMissed += s.Missed
	side.SteadyDoubled += s.Doubled
	r, err := b.stream(ctx, b.cfg.FloorStreamFor, true)
	if err != nil {
		return err
	}
	side.RestartGapSeconds = append(side.RestartGapSeconds, ptr.To(r.GapSeconds))
	side.RestartMissed += r.Missed
	side.RestartDoubled += r.Doubled
	logf("Versus streams: steady p99 %.1f ms, %d missed, %d doubled; restart: longest gap %.3f s, %d missed, %d doubled",
		s.Latency.P99, s.Missed, s.Doubled, r.GapSeconds, r.Missed, r.Doubled)
	return nil
}

// requestsSince appends to to the controller's API requests since from
// (the audit log read anew) per rollout of a figure of rollouts.
func (b *bench) requestsSince(from time.Time, rollouts int, to *[]*float64) error {
	if err := b.audit.Read(); err != nil {
		return err
	}
	n := audit.Count(b.audit.Between(from, time.Now())).Total()
	*to = append(*to, ptr.To(stats.Round(float64(n)/float64(max(rollouts, 1)), 3)))
	return nil
}

// perRollout returns each round's seconds vs as milliseconds per rollout of
// a figure of rollouts; nil stays nil.
func perRollout(vs []*float64, rollouts int) []*float64 {
	out := make([]*float64, len(vs))
	for i, v := range vs {
		if v != nil {
			out[i] = ptr.To(*v * 1000 / float64(max(rollouts, 1)))
		}
	}
	return out
}

// cpuSince returns the controllers' CPU seconds since b.cpu() returned
// start.
func (b *bench) cpuSince(start float64) *float64 {
	return ptr.To(stats.Round(b.cpu()-start, 3))
}

// turnTo makes the floor (or the controller under test) the one running:
// it stops the other, starts this one and waits until it is synced and
// quiet. The controller under test, restarted, first rolls what changed
// while the floor ran (as in the downtime scenario) and writes its Events;
// the wait covers those and its rollout window, so that its turn times
// only its own changes.
func (b *bench) turnTo(ctx context.Context, floor bool) error {
	cmd := b.cfg.ControllerCmd
	if floor {
		cmd = b.cfg.FloorCmd
	}
	if b.ctrl != nil && b.ctrlCmd == cmd && b.ctrl.Exited() == nil {
		return nil
	}
	if b.ctrl != nil && b.ctrl.Exited() == nil {
		if _, err := b.stopController(); err != nil {
			return err
		}
	}
	if err := b.phase("versus-start-" + map[bool]string{true: "floor", false: b.cfg.ControllerName}[floor]); err != nil {
		return err
	}
	if err := b.start(cmd); err != nil {
		return err
	}
	c := b.ctrl
	if probed, err := b.probe(ctx, time.Now().Add(b.cfg.SyncTimeout)); err != nil {
		return err
	} else if probed.IsZero() {
		return fmt.Errorf("%s did not roll the probe within %v of its start", cmd, b.cfg.SyncTimeout)
	}
	if !floor {
		if err := b.rolloutsQuiet(ctx, time.Second, b.cfg.WaitTimeout); err != nil {
			return err
		}
		if _, err := b.eventsQuiet(ctx, versusQuiet, b.cfg.WaitTimeout); err != nil {
			return err
		}
		if err := b.settle(ctx, b.cfg.Window); err != nil {
			return err
		}
	}
	logf("Versus: %s running (started %.1f s ago)", strings.Fields(cmd)[0], time.Since(c.Started()).Seconds())
	return nil
}

// rolloutsQuiet waits until the benchmark has seen no rollout for quiet, or
// timeout.
func (b *bench) rolloutsQuiet(ctx context.Context, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if len(b.watcher.RolloutsBetween(time.Now().Add(-quiet), time.Now())) == 0 {
			return nil
		}
		if err := b.settle(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("rollouts went on for %v", timeout)
}

// applyFloor server-side applies value to the bound field of every Harbor
// of names from results.ApplyFloorWorkers goroutines, with no cache, status or
// Event: hack/bench/applyfloor's fan-out, on the benchmark's plane and
// client.
func (b *bench) applyFloor(ctx context.Context, names []string, value string) error {
	harbors := b.dyn.Resource(harborGVR).Namespace(bindingNamespace)
	var g errgroup.Group
	g.SetLimit(results.ApplyFloorWorkers)
	for _, name := range names {
		g.Go(func() error {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
				"metadata": map[string]any{"name": name, "namespace": bindingNamespace},
			}}
			if err := unstructured.SetNestedField(u.Object, value, accessKeyPath...); err != nil {
				return err
			}
			if _, err := harbors.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: "applyfloor", Force: true}); err != nil {
				return fmt.Errorf("applying to Harbor %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait() // the first error, when any failed
}

func applyFloorHarbor(i int) string { return fmt.Sprintf("h-a-%04d", i) }

// versusRatios returns the ratios of res. Each figure's ratio is the median
// of its per-round ratios (the controller's turn over the floor's turn of the
// same round), not the ratio of the two sides' medians: the two turns of a
// round run one right after the other, so a slow stretch of the shared
// machine that spans both cancels in their ratio, and the median drops the
// rounds where it hit one turn only. For the latency the per-round ratio is
// that of the turn's own percentile; the pooled percentiles of every round
// are kept beside it.
func versusRatios(res *results.Versus) []results.Ratio {
	var out []results.Ratio
	add := func(figure, unit string, c, f []*float64, pooledC, pooledF float64, target float64) {
		if len(c) == 0 || len(f) == 0 {
			return
		}
		r := results.Ratio{Figure: figure, Unit: unit, Target: target}
		per := make([]*float64, 0, min(len(c), len(f)))
		for i := range min(len(c), len(f)) {
			if c[i] == nil || f[i] == nil {
				per = append(per, nil)
				continue
			}
			v := *c[i] / *f[i]
			per = append(per, &v)
			r.Rounds = append(r.Rounds, fmt.Sprintf("%.2f", v))
		}
		mr, ok := median(per)
		if !ok {
			r.Rounds = []string{"a round missed"}
			out = append(out, r)
			return
		}
		r.Ratio = stats.Round(mr, 2)
		r.Low, r.High = spread(per)
		if pooledC > 0 && pooledF > 0 {
			r.Controller, r.Floor, r.Pooled = pooledC, pooledF, stats.Round(pooledC/pooledF, 2)
		} else {
			r.Controller, _ = median(c)
			r.Floor, _ = median(f)
		}
		out = append(out, r)
	}
	c, f := res.Controller, res.Floor
	add("fan-out (all rolled)", "s", c.FanOutSeconds, f.FanOutSeconds, 0, 0, 1.1)
	add("burst (all rolled)", "s", c.BurstSeconds, f.BurstSeconds, 0, 0, 1.1)
	pct := func(ds []stats.Distribution, p func(stats.Distribution) float64) []*float64 {
		vs := make([]*float64, len(ds))
		for i, d := range ds {
			if v := p(d); d.N > 0 && v > 0 {
				vs[i] = &v
			}
		}
		return vs
	}
	p50 := func(d stats.Distribution) float64 { return d.P50 }
	p99 := func(d stats.Distribution) float64 { return d.P99 }
	if c.Latency.N > 0 && f.Latency.N > 0 {
		add("change → pod template p50", "ms", pct(c.LatencyRounds, p50), pct(f.LatencyRounds, p50), c.Latency.P50, f.Latency.P50, 1.1)
		add("change → pod template p99", "ms", pct(c.LatencyRounds, p99), pct(f.LatencyRounds, p99), c.Latency.P99, f.Latency.P99, 1.1)
	}
	add("value-binding fan-out (all hold the value)", "s", c.BindingFanOutSeconds, f.BindingFanOutSeconds, 0, 0, 1.15)
	if c.Steady.N > 0 && f.Steady.N > 0 {
		add("steady stream: change → rollout p99", "ms", pct(c.SteadyRounds, p99), pct(f.SteadyRounds, p99), c.Steady.P99, f.Steady.P99, 1.5)
	}
	add("restart under the stream: longest time with no rollout", "s", c.RestartGapSeconds, f.RestartGapSeconds, 0, 0, 1.25)
	// Issue 34's targets: on a machine whose cores are shared, the
	// controller's CPU is taken from the API server's; its requests are
	// the rollout and its Event, nothing else: twice a bare floor's, as
	// many as a floor that records an Event per rollout (--events).
	n := res.Workloads
	requests := 2.0
	if floorEvents(res.FloorCmd) {
		requests = 1
	}
	add("fan-out: CPU per rollout, its Event included", "ms", perRollout(c.FanOutCPU, n.FanOut), perRollout(f.FanOutCPU, n.FanOut), 0, 0, 1.25)
	add("burst: CPU per rollout, its Event included", "ms", perRollout(c.BurstCPU, n.Burst), perRollout(f.BurstCPU, n.Burst), 0, 0, 1.25)
	add("sequential changes: CPU per rollout, its Event included", "ms", perRollout(c.LatencyCPU, n.Latency), perRollout(f.LatencyCPU, n.Latency), 0, 0, 1.25)
	add("steady stream: CPU per change, its Event included", "ms", c.SteadyCPUPerUpdate, f.SteadyCPUPerUpdate, 0, 0, 1.25)
	add("fan-out: API requests per rollout", "", c.FanOutRequests, f.FanOutRequests, 0, 0, requests)
	add("burst: API requests per rollout", "", c.BurstRequests, f.BurstRequests, 0, 0, requests)
	add("sequential changes: API requests per rollout", "", c.LatencyRequests, f.LatencyRequests, 0, 0, requests)
	add("steady stream: API requests per change", "", c.SteadyRequestsPerUpdate, f.SteadyRequestsPerUpdate, 0, 0, requests)
	return out
}

// floorEvents reports whether the floor's command line asks it to record
// an Event per rollout (hack/bench/floor's --events).
func floorEvents(cmd string) bool {
	return slices.Contains(strings.Fields(cmd), "--events")
}

// median returns the median of vs (the mean of the middle two of an even
// count), false when one is nil (a round with a miss).
func median(vs []*float64) (float64, bool) {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if v == nil {
			return 0, false
		}
		s = append(s, *v)
	}
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// spread returns the lowest and highest of vs, none nil, rounded to two
// digits.
func spread(vs []*float64) (low, high float64) {
	for i, v := range vs {
		if i == 0 || *v < low {
			low = *v
		}
		if i == 0 || *v > high {
			high = *v
		}
	}
	return stats.Round(low, 2), stats.Round(high, 2)
}
