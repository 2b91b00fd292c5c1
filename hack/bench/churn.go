package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

// churnNamespace holds the churn scenario's ConfigMap and its short-lived
// Deployments.
const churnNamespace = "bench-churn"

// churnMargin is how long a Deployment must exist before a change, and
// after it, for the change to be expected to roll it: time for the
// controller to see it, and to roll it before it is gone.
const churnMargin = 500 * time.Millisecond

// life is one churned Deployment.
type life struct {
	key              string
	created, deleted time.Time
}

// churn creates a Deployment every cfg.ChurnEvery, deletes each
// cfg.ChurnLife after its creation, and changes the ConfigMap they all use
// every cfg.ChurnChange, for cfg.ChurnFor; then counts, per change, the
// Deployments alive at it that rolled for it.
func (b *bench) churn(ctx context.Context) error {
	c := b.cfg
	res := &results.Churn{Load: results.LoadAvg(), Seconds: c.ChurnFor.Seconds(), EveryMS: stats.MS(c.ChurnEvery), LifeMS: stats.MS(c.ChurnLife), ChangeMS: stats.MS(c.ChurnChange)}
	b.res.Churn = res
	shared := Source{configMapKind, churnNamespace, "shared"}
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: churnNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := b.cs.CoreV1().ConfigMaps(churnNamespace).Create(ctx, b.changer.data.object(shared).(*corev1.ConfigMap), metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := b.phase("churn"); err != nil {
		return err
	}
	// The timeline: creations, deletions and changes, in time order.
	type step struct {
		at     time.Duration
		create int // index of the Deployment to create, or -1
		delete int // index of the Deployment to delete, or -1
	}
	var steps []step
	for i := 0; time.Duration(i)*c.ChurnEvery < c.ChurnFor; i++ {
		at := time.Duration(i) * c.ChurnEvery
		steps = append(steps, step{at, i, -1}, step{at + c.ChurnLife, -1, i})
	}
	for at := c.ChurnChange; at < c.ChurnFor; at += c.ChurnChange {
		steps = append(steps, step{at, -1, -1})
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	use := Use{Source: shared, Way: EnvFrom}
	lives := make([]life, len(steps))
	var changes []time.Time
	begin := time.Now()
	for _, s := range steps {
		time.Sleep(time.Until(begin.Add(s.at)))
		switch {
		case s.create >= 0:
			name := fmt.Sprintf("churn-%04d", s.create)
			lives[s.create] = life{key: churnNamespace + "/" + name, created: time.Now()}
			if _, err := b.cs.AppsV1().Deployments(churnNamespace).Create(ctx, deployment(churnNamespace, name, []Use{use}), metav1.CreateOptions{}); err != nil {
				return err
			}
			res.Deployments++
		case s.delete >= 0:
			name := fmt.Sprintf("churn-%04d", s.delete)
			if err := b.cs.AppsV1().Deployments(churnNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			lives[s.delete].deleted = time.Now()
		default:
			at, _, err := b.changer.Change(ctx, shared)
			if err != nil {
				return err
			}
			changes = append(changes, at)
		}
	}
	lives = lives[:res.Deployments]
	if err := b.settle(ctx, c.Settle); err != nil {
		return err
	}
	res.Changes = len(changes)
	rollouts := map[string][]time.Time{}
	for _, r := range b.rollouts(begin, time.Now()) {
		rollouts[r.Key] = append(rollouts[r.Key], r.At)
	}
	for _, l := range lives {
		made := 0
		for i, at := range changes {
			if at.After(l.created) && at.Before(l.deleted) {
				made++
			}
			if l.created.After(at.Add(-churnMargin)) || l.deleted.Before(at.Add(churnMargin)) {
				continue
			}
			res.Expected++
			until := l.deleted
			if i+1 < len(changes) && changes[i+1].Before(until) {
				until = changes[i+1]
			}
			if slices.ContainsFunc(rollouts[l.key], func(t time.Time) bool { return t.After(at) && !t.After(until) }) {
				res.Seen++
			} else {
				res.Missed++
			}
		}
		if extra := len(rollouts[l.key]) - made; extra > 0 {
			res.Doubled += extra
			logf("Churn: %s (created %s, deleted %s) rolled at %s for %d changes made in its life (changes at %s)",
				l.key, clock(l.created), clock(l.deleted), clocks(rollouts[l.key]), made, clocks(changes))
		}
	}
	if err := b.perUpdate(len(changes), &res.CPUPerUpdate, &res.RequestsPerUpdate); err != nil {
		return err
	}
	logf("Churn: %d Deployments, %d changes: %d of %d expected rollouts seen, %d missed, %d doubled",
		res.Deployments, res.Changes, res.Seen, res.Expected, res.Missed, res.Doubled)
	return nil
}

// clocks formats each of ts as clock does, comma-separated.
func clocks(ts []time.Time) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = clock(t)
	}
	return strings.Join(out, ", ")
}
