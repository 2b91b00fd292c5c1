package controller_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// lifeGap is how long after its workload's creation a source is created or
// deleted: the gap of Reloader's own e2e suite (54 ms in its log).
const lifeGap = 50 * time.Millisecond

// lifeCase is one workload of TestSourceCreatedOrDeletedJustAfterItsWorkload:
// how it reads its source, and in which order the source's creation or
// deletion and the workload's creation come.
type lifeCase struct {
	name string
	kind string // ConfigMap or Secret
	// named: Reloader's reload annotation names the source, which the pod
	// spec does not read; otherwise the pod spec reads it whole (envFrom,
	// required) and nudge.dev/auto selects it.
	named bool
	// before: the source's creation or deletion comes before the workload's
	// creation (nothing may roll); otherwise lifeGap after it (one
	// rollout).
	before bool
}

func (c lifeCase) source() string { return c.name + "-src" }

func (c lifeCase) object(ns string) client.Object {
	if c.kind == "Secret" {
		return nt.Secret(ns, c.source(), map[string]string{"password": "p"})
	}
	return nt.ConfigMap(ns, c.source(), map[string]string{"a": "1"})
}

func (c lifeCase) deployment(ns string) *appsv1.Deployment {
	if c.named {
		key := strings.ToLower(c.kind) + ".reloader.stakater.com/reload"
		return nt.Deployment(ns, c.name, 1, map[string]string{key: c.source()})
	}
	return nt.Deployment(ns, c.name, 1, auto, nt.EnvFrom(c.kind, c.source()))
}

// lifeCases returns every combination of kind, shape and order, n times
// each.
func lifeCases(n int) []lifeCase {
	var out []lifeCase
	for i := range n {
		for _, kind := range []string{"ConfigMap", "Secret"} {
			for _, named := range []bool{false, true} {
				for _, before := range []bool{false, true} {
					out = append(out, lifeCase{name: fmt.Sprintf("w%d-%s-named%t-before%t", i, strings.ToLower(kind), named, before),
						kind: kind, named: named, before: before})
				}
			}
		}
	}
	return out
}

// Rule 3 for a source's whole life, with Reloader's --reload-on-delete and
// --reload-on-create: a ConfigMap or Secret deleted (or created) 50 ms
// after its Deployment was created rolls the Deployment once, as Reloader
// does and as an update at that moment does, whether nudge's first sight of
// the Deployment came before the event or after it; one deleted (or
// created) before the Deployment's creation rolls nothing. With one worker
// and a queue of 100 Deployments ahead ("queued"), first sight comes after
// the event; without ("direct"), mostly before. Reloader's own flags suite
// found the first order: no rollout at all.
func TestSourceCreatedOrDeletedJustAfterItsWorkload(t *testing.T) {
	for _, flag := range []string{"--reload-on-delete", "--reload-on-create"} {
		for _, queued := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s queued=%t", flag, queued), func(t *testing.T) {
				e := setup(t, true, func(o *options.Options) {
					o.RolloutWindow = 0
					o.ReloadOnDelete = flag == "--reload-on-delete"
					o.ReloadOnCreate = flag == "--reload-on-create"
					if queued {
						o.Workers = 1
					}
				})
				watching(e)
				if queued {
					queue(e)
				}
				cases := lifeCases(2)
				var wg sync.WaitGroup
				for _, c := range cases {
					wg.Go(func() { playLife(e, c, flag) })
				}
				wg.Wait()
				for _, c := range cases {
					if !c.before {
						e.G.Eventually(e.Rollouts(c.name)).WithTimeout(30*time.Second).Should(BeNumerically(">=", 1),
							"Deployment %s to be rolled for its %s's %s %s after its creation", c.name, c.kind, flag, lifeGap)
					}
				}
				for _, c := range cases {
					if c.before {
						e.Baselined(c.name)
					}
				}
				e.G.Consistently(func() map[string]int64 {
					out := map[string]int64{}
					for _, c := range cases {
						out[c.name] = e.Rollouts(c.name)()
					}
					return out
				}).WithTimeout(3*time.Second).Should(Equal(wantLives(cases)),
					"each Deployment rolled once when its source's event came after its creation, never when before")
			})
		}
	}
}

// playLife plays c's sequence: with --reload-on-delete, the source is
// created, then deleted before the workload's creation or lifeGap after it;
// with --reload-on-create, it is created before the workload's creation or
// lifeGap after it.
func playLife(e *env, c lifeCase, flag string) {
	e.T.Helper()
	d := c.deployment(e.NS)
	del := func() {
		e.G.Expect(suite.K8s.Delete(e.Ctx, c.object(e.NS))).To(Succeed(), "deleting %s %s", c.kind, c.source())
	}
	switch {
	case flag == "--reload-on-delete" && c.before:
		e.Create(c.object(e.NS))
		del()
		e.Create(d)
	case flag == "--reload-on-delete":
		e.Create(c.object(e.NS), d)
		time.Sleep(lifeGap) // the sequence under test: the deletion comes lifeGap after the creation
		del()
	case c.before:
		e.Create(c.object(e.NS), d)
	default:
		e.Create(d)
		time.Sleep(lifeGap) // the sequence under test: the creation comes lifeGap after the workload's
		e.Create(c.object(e.NS))
	}
}

// wantLives returns the rollouts each case's Deployment must have had.
func wantLives(cases []lifeCase) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cases {
		out[c.name] = 0
		if !c.before {
			out[c.name] = 1
		}
	}
	return out
}

// Without Reloader's flags, rule 5 at a workload's creation: an optional
// ConfigMap that appears or disappears 50 ms after its Deployment's
// creation rolls it once; a required one deleted then holds (no rollout),
// and its return with other content rolls it once, with the same content
// not at all; a required one created then is what the pods start with.
// Behind a queue, nudge's first sight comes after the event.
func TestOptionalSourceAppearingJustAfterItsWorkloadRolls(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow, o.Workers = 0, 1 })
	watching(e)
	queue(e)
	cm := func(name, v string) *corev1.ConfigMap { return nt.ConfigMap(e.NS, name, map[string]string{"a": v}) }
	optional := func(name string) *appsv1.Deployment {
		return nt.Deployment(e.NS, name, 1, auto, nt.EnvKey("ConfigMap", name+"-src", "a", true))
	}
	required := func(name string) *appsv1.Deployment {
		return nt.Deployment(e.NS, name, 1, auto, nt.EnvFrom("ConfigMap", name+"-src"))
	}
	gap := func() { time.Sleep(lifeGap) } // the sequence under test
	del := func(name string) {
		e.G.Expect(suite.K8s.Delete(e.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name}})).To(Succeed())
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.Create(optional("appears")); gap(); e.Create(cm("appears-src", "1")) })
	wg.Go(func() { e.Create(cm("vanishes-src", "1"), optional("vanishes")); gap(); del("vanishes-src") })
	wg.Go(func() { e.Create(required("created")); gap(); e.Create(cm("created-src", "1")) })
	wg.Go(func() { e.Create(cm("held-src", "1"), required("held")); gap(); del("held-src") })
	wg.Go(func() { e.Create(cm("same-src", "1"), required("same")); gap(); del("same-src") })
	wg.Wait()
	for _, name := range []string{"held", "same", "created"} {
		e.Baselined(name)
	}
	e.Create(cm("held-src", "2"), cm("same-src", "1"))
	want := map[string]int64{"appears": 1, "vanishes": 1, "created": 0, "held": 1, "same": 0}
	for name, n := range want {
		if n > 0 {
			e.G.Eventually(e.Rollouts(name)).WithTimeout(30*time.Second).Should(BeNumerically(">=", n), "Deployment %s to be rolled", name)
		}
	}
	e.G.Consistently(func() map[string]int64 {
		out := map[string]int64{}
		for name := range want {
			out[name] = e.Rollouts(name)()
		}
		return out
	}).WithTimeout(3 * time.Second).Should(Equal(want))
}
