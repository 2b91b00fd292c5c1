package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// largeNamespace holds the large scenario's sources and Deployments.
const largeNamespace = "bench-large"

// large creates cfg.LargeSources Secrets and as many ConfigMaps of
// cfg.LargeBytes each, in a namespace of their own, and a Deployment using
// each (the way of use rotating), waits until the controller has seen them,
// then changes every source in turn, cfg.LargeChanges rounds, waiting for
// each change's rollout.
func (b *bench) large(ctx context.Context) error {
	c := b.cfg
	res := &results.Large{Load: results.LoadAvg(), Sources: 2 * c.LargeSources, Bytes: c.LargeBytes, Keys: c.Keys, Rounds: c.LargeChanges}
	b.res.Large = res
	before, err := b.ctrl.Stats()
	if err != nil {
		return err
	}
	res.RSSBeforeMiB = stats.MiB(before.RSSBytes)
	if err := b.phase("large-setup"); err != nil {
		return err
	}
	changer := &changer{cs: b.cs, data: newContent(c.Keys, c.LargeBytes)}
	var sources, deployments []metav1.Object
	var srcs []Source
	var keys []string
	for i := range res.Sources {
		s := Source{secretKind, largeNamespace, fmt.Sprintf("s-%03d", i/2)}
		if i%2 == 1 {
			s = Source{configMapKind, largeNamespace, fmt.Sprintf("c-%03d", i/2)}
		}
		name := "large-" + s.Name
		srcs, keys = append(srcs, s), append(keys, largeNamespace+"/"+name)
		sources = append(sources, changer.data.object(s))
		deployments = append(deployments, deployment(largeNamespace, name, []Use{{Source: s, Way: Way(i % int(ways))}}))
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: largeNamespace}}
	for _, batch := range []struct {
		what string
		objs []metav1.Object
	}{{"namespaces", []metav1.Object{ns}}, {"large sources", sources}, {"Deployments", deployments}} {
		if err := createEach(ctx, b.cs, c.Creators, batch.what, batch.objs); err != nil {
			return err
		}
	}
	if err := b.awaitSeen(ctx, keys); err != nil {
		return err
	}
	if err := b.phase("large"); err != nil {
		return err
	}
	// The changes take about 10 s (120 of 80 ms): a profile of 8 s ends
	// before them.
	defer b.prof().cpu(ctx, "cpu-large.pprof", 2*scenarioProfile)()
	begin := time.Now()
	var changes []sent
	for range c.LargeChanges {
		for i, s := range srcs {
			at, _, err := changer.Change(ctx, s)
			if err != nil {
				return err
			}
			changes = append(changes, sent{key: keys[i], at: at})
			if _, missing := b.watcher.WaitRolled(ctx, keys[i:i+1], at, c.ChangeTimeout); len(missing) > 0 {
				logf("Missed: %s did not roll within %v of a change of %s", keys[i], c.ChangeTimeout, s)
			}
		}
	}
	if err := b.settle(ctx, c.Settle); err != nil {
		return err
	}
	res.Changes = len(changes)
	lats, missed, doubled := matchChanges(changes, b.rollouts(begin, time.Now()), c.ChangeTimeout)
	res.Latency, res.Missed, res.Doubled = stats.NewDistribution(lats), missed, doubled
	if err := b.perUpdate(len(changes), &res.CPUPerUpdate, &res.RequestsPerUpdate); err != nil {
		return err
	}
	after, err := b.ctrl.Stats()
	if err != nil {
		return err
	}
	res.RSSAfterMiB, res.PeakRSSMiB = stats.MiB(after.RSSBytes), stats.MiB(after.PeakBytes)
	logf("Large: %d changes of %d sources of %d bytes: p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d missed, %d doubled; RSS %.1f → %.1f MiB (peak %.1f)",
		res.Changes, res.Sources, res.Bytes, res.Latency.P50, res.Latency.P99, res.Latency.Max, res.Missed, res.Doubled,
		res.RSSBeforeMiB, res.RSSAfterMiB, res.PeakRSSMiB)
	return nil
}

// awaitSeen waits until the controller has seen the workloads of keys,
// just created: until each carries the baseline annotation when the
// controller writes it (it did at sync), else for seenMargin.
func (b *bench) awaitSeen(ctx context.Context, keys []string) error {
	if n, _ := b.watcher.Baselined(); n == 0 {
		return b.settle(ctx, seenMargin)
	}
	if missing := b.watcher.WaitKeysBaselined(ctx, keys, b.cfg.WaitTimeout); len(missing) > 0 {
		return fmt.Errorf("%d workloads were not baselined within %v: %v", len(missing), b.cfg.WaitTimeout, missing)
	}
	return nil
}

// seenMargin is how long a controller that writes no baseline is given to
// see new workloads before their sources change.
const seenMargin = time.Second
