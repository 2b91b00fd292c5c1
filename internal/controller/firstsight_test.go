package controller_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// firstSightPairs is how many Deployments each test here creates, each
// with its own ConfigMap, to make the race with nudge's first reconcile
// likely: sometimes nudge sees the Deployment before the ConfigMap's
// change, sometimes after.
const firstSightPairs = 20

// Rule 3: a ConfigMap changed just after its Deployment was created rolls
// the Deployment exactly once, whether nudge's first reconcile of the
// Deployment read the old content (the change then rolls it as any change)
// or already the new one (its first sight rolls it, instead of recording
// the new content as what the pods run with). One worker and a queue of
// other Deployments ahead make the second order the usual one.
func TestChangeJustAfterCreationRollsOnce(t *testing.T) {
	e := queued(t)
	inPairs(func(i int) {
		cm, web := fmt.Sprintf("app-%d", i), fmt.Sprintf("web-%d", i)
		e.Create(nt.ConfigMap(e.NS, cm, map[string]string{"a": "1"}),
			nt.Deployment(e.NS, web, 1, auto, nt.EnvFrom("ConfigMap", cm)))
		e.UpdateConfigMap(cm, func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	})
	for i := range firstSightPairs {
		web := fmt.Sprintf("web-%d", i)
		e.G.Eventually(e.Rollouts(web)).WithTimeout(20*time.Second).Should(BeNumerically(">=", 1),
			"Deployment %s to be rolled for its ConfigMap's change", web)
	}
	e.settled(1)
}

// Rule 3: a ConfigMap created just after its Deployment is what the
// Deployment's pods start with: nudge records it and rolls nothing, though
// its first reconcile of the Deployment (behind a queue, as above) sees a
// ConfigMap newer than the Deployment.
func TestSourceCreatedJustAfterItsWorkloadRollsNothing(t *testing.T) {
	e := queued(t)
	inPairs(func(i int) {
		cm, web := fmt.Sprintf("app-%d", i), fmt.Sprintf("web-%d", i)
		e.Create(nt.Deployment(e.NS, web, 1, auto, nt.EnvFrom("ConfigMap", cm)),
			nt.ConfigMap(e.NS, cm, map[string]string{"a": "1"}))
	})
	for i := range firstSightPairs {
		web := fmt.Sprintf("web-%d", i)
		e.G.Eventually(func() string { return e.Deployment(web).Annotations[workload.AppliedAnnotation] }).
			WithTimeout(20*time.Second).Should(ContainSubstring(fmt.Sprintf("ConfigMap/app-%d", i)),
			"nudge to record Deployment %s's ConfigMap", web)
	}
	e.settled(0)
}

// Rule 2 and 3: a key a Deployment does not read, changed just after its
// creation, rolls nothing, though first sight (behind a queue) reads the
// ConfigMap after the change.
func TestUnreadKeyChangedJustAfterCreationRollsNothing(t *testing.T) {
	e := queued(t)
	inPairs(func(i int) {
		cm, web := fmt.Sprintf("app-%d", i), fmt.Sprintf("web-%d", i)
		e.Create(nt.ConfigMap(e.NS, cm, map[string]string{"a": "1", "b": "1"}),
			nt.Deployment(e.NS, web, 1, auto, nt.EnvKey("ConfigMap", cm, "a", false)))
		e.UpdateConfigMap(cm, func(c *corev1.ConfigMap) { c.Data["b"] = "2" })
	})
	for i := range firstSightPairs {
		e.Baselined(fmt.Sprintf("web-%d", i))
	}
	e.settled(0)
}

// queued returns t's env with a nudge of one worker and no rollout window
// that watches its namespace (see watching), with 100 Deployments in its
// queue (see queue).
func queued(t *testing.T) *env {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow, o.Workers = 0, 1 })
	watching(e)
	queue(e)
	return e
}

// inPairs runs pair for 0 to firstSightPairs-1, four at a time.
func inPairs(pair func(i int)) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < firstSightPairs; i += 4 {
				pair(i)
			}
		})
	}
	wg.Wait()
}

// settled checks for 3 s that each Deployment web-<i> has had n rollouts,
// and the queue's none.
func (e *env) settled(n int64) {
	e.T.Helper()
	e.G.Consistently(func() map[string]int64 { return rolloutsOf(e, "web-%d") }).WithTimeout(3*time.Second).
		Should(HaveEach(n), "each Deployment rolled %d time(s)", n)
	e.G.Expect(rolloutsOf(e, "queue-%d")).To(HaveEach(int64(0)), "no other Deployment rolled")
}

// watching returns once nudge watches e's namespace: it has recorded a
// Deployment created after it started, so its caches of Deployments and
// ConfigMaps have synced, and later creations reach it as watch events (a
// workload listed at nudge's start is first sight as at install).
func watching(e *env) {
	e.T.Helper()
	e.Create(nt.ConfigMap(e.NS, "fence", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "fence", 1, auto, nt.EnvFrom("ConfigMap", "fence")))
	e.Baselined("fence")
}

// queue creates 100 Deployments reading the fence ConfigMap (see
// watching): with one worker, nudge's first reconcile of a Deployment
// created just after waits behind theirs.
func queue(e *env) {
	e.T.Helper()
	for i := range 100 {
		e.Create(nt.Deployment(e.NS, fmt.Sprintf("queue-%d", i), 1, auto, nt.EnvFrom("ConfigMap", "fence")))
	}
}

// rolloutsOf returns the rollouts of the Deployments named by format and
// 0 to firstSightPairs-1.
func rolloutsOf(e *env, format string) map[string]int64 {
	out := map[string]int64{}
	for i := range firstSightPairs {
		name := fmt.Sprintf(format, i)
		out[name] = e.Rollouts(name)()
	}
	return out
}

// Rule 3, the other way round: a ConfigMap changed just before its
// Deployment was created is what the Deployment's pods start with, so
// nothing rolls, though nudge's first reconcile of the Deployment may read
// a cache the change has not reached (and record the old content), the
// change arriving after. Updates of large ConfigMaps just before each pair
// keep nudge's ConfigMap watch busy, so that order comes often; the test
// logs how often (a Deployment whose recorded state changed without a
// rollout). Before settled sources (the source's cached resourceVersion at
// or before the Deployment's creation: rollout.Input.Settled), each such
// Deployment rolled once.
func TestChangeJustBeforeCreationRollsNothing(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	watching(e)
	const noise = 24
	big := func(round int) map[string]string {
		return map[string]string{"a": strings.Repeat(strconv.Itoa(round%10), 256<<10)}
	}
	for i := range noise {
		e.Create(nt.ConfigMap(e.NS, fmt.Sprintf("noise-%d", i), big(0)))
	}
	states := watchApplied(t, e)
	for i := range firstSightPairs {
		cm, web := fmt.Sprintf("app-%d", i), fmt.Sprintf("web-%d", i)
		e.Create(nt.ConfigMap(e.NS, cm, map[string]string{"a": "1"}))
		var wg sync.WaitGroup
		for n := range noise {
			wg.Go(func() {
				e.UpdateConfigMap(fmt.Sprintf("noise-%d", n), func(c *corev1.ConfigMap) { c.Data = big(i + 1) })
			})
		}
		wg.Wait()
		e.UpdateConfigMap(cm, func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
		e.Create(nt.Deployment(e.NS, web, 1, auto, nt.EnvFrom("ConfigMap", cm)))
	}
	for i := range firstSightPairs {
		e.Baselined(fmt.Sprintf("web-%d", i))
	}
	e.settled(0)
	rebaselined := 0
	for i := range firstSightPairs {
		if states.count(fmt.Sprintf("web-%d", i)) > 1 {
			rebaselined++
		}
	}
	t.Logf("%d of %d Deployments were first seen before their ConfigMap's change reached nudge's cache, and re-baselined",
		rebaselined, firstSightPairs)
}

// appliedStates counts, per Deployment, the distinct applied states nudge
// recorded on it.
type appliedStates struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
}

func (s *appliedStates) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen[name])
}

// watchApplied starts recording the applied states of e's Deployments,
// from a watch, until the test ends.
func watchApplied(t *testing.T, e *env) *appliedStates {
	t.Helper()
	events := nt.Watch(t, e.K8s, &appsv1.DeploymentList{}, client.InNamespace(e.NS))
	s := &appliedStates{seen: map[string]map[string]bool{}}
	go func() {
		for ev := range events {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || d.Annotations[workload.AppliedAnnotation] == "" {
				continue
			}
			s.mu.Lock()
			if s.seen[d.Name] == nil {
				s.seen[d.Name] = map[string]bool{}
			}
			s.seen[d.Name][d.Annotations[workload.AppliedAnnotation]] = true
			s.mu.Unlock()
		}
	}()
	return s
}
