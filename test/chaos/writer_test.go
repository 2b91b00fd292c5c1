package chaos

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxChanges bounds the changes TestSecondWriterConflictsRollEachChangeOnce
// makes while it waits for 3 conflicting writes.
const maxChanges = 60

// conflictRetried is what nudge logs (at debug level) when a write of its
// was refused because the workload changed since nudge read it.
const conflictRetried = "Retrying after a write conflict"

// A second writer updates every Deployment 100 times a second (a label, by
// read-modify-Update, as another controller would): nudge's writes, guarded
// by the version they read, meet conflicts and are retried, and each change
// of the source is rolled exactly once. Changes go on until nudge has
// retried at least 3 conflicting writes, at most maxChanges.
func TestSecondWriterConflictsRollEachChangeOnce(t *testing.T) {
	e := setup(t, plane, k8s)
	n := 5
	names := e.fanOut(n)
	p := e.nudge(plane.Kubeconfig(), "--rollout-window=0", "--log-level=debug")
	e.baselined(n)

	w := startWriter(e, names, 100)
	changes := 0
	for changes < 3 || strings.Count(p.Output(), conflictRetried) < 3 {
		if changes == maxChanges {
			t.Fatalf("nudge retried %d conflicting writes in %d changes (the writer made %d updates, %d of its own refused); want 3",
				strings.Count(p.Output(), conflictRetried), changes, w.updates.Load(), w.conflicts.Load())
		}
		// Each change waits for the writer's next update: nudge rolls a
		// change in milliseconds, so back-to-back changes would leave the
		// writer no time between them to conflict with. The writers tick
		// together, so the change lands while the others of that tick
		// are in flight (waiting for all of them would land it in the
		// quiet between ticks, where nothing conflicts).
		since := w.updates.Load()
		e.g.Eventually(w.updates.Load).WithTimeout(10*time.Second).Should(BeNumerically(">", since),
			"the writer to update a Deployment before change %d", changes+1)
		changes++
		e.updateConfigMap("shared", "v", strconv.Itoa(changes+1))
		e.g.Eventually(e.rollouts.Counts).WithTimeout(fanOut).Should(HaveLen(n), "every Deployment rolled")
		e.g.Eventually(e.rollouts.Counts).WithTimeout(fanOut).Should(HaveEach(BeNumerically(">=", changes)),
			"every Deployment rolled for change %d", changes)
	}
	w.stop()
	t.Logf("%d changes; nudge retried %d conflicting writes; the writer made %d updates, %d refused, %d failed",
		changes, strings.Count(p.Output(), conflictRetried), w.updates.Load(), w.conflicts.Load(), w.failed.Load())
	e.g.Expect(w.updates.Load()).To(BeNumerically(">", 0), "the writer wrote")
	e.rolledEach(names, changes)
}

// writer updates Deployments by read-modify-Update at a fixed rate each.
type writer struct {
	cancel             context.CancelFunc
	wg                 sync.WaitGroup
	updates, conflicts atomic.Int64
	failed             atomic.Int64 // other errors, e.g. at the end of the test
}

// startWriter starts updating each of names perSecond times a second, until
// stop or the end of the test.
func startWriter(e *env, names []string, perSecond int) *writer {
	ctx, cancel := context.WithCancel(e.ctx)
	w := &writer{cancel: cancel}
	e.t.Cleanup(w.stop)
	for _, name := range names {
		w.wg.Go(func() {
			tick := time.NewTicker(time.Second / time.Duration(perSecond))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				var d appsv1.Deployment
				if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &d); err != nil {
					w.failed.Add(1)
					continue
				}
				if d.Labels == nil {
					d.Labels = map[string]string{}
				}
				d.Labels["chaos.nudge.dev/writer"] = strconv.Itoa(i)
				switch err := e.c.Update(ctx, &d); {
				case err == nil:
					w.updates.Add(1)
				case apierrors.IsConflict(err):
					w.conflicts.Add(1)
				default:
					w.failed.Add(1)
				}
			}
		})
	}
	return w
}

// stop stops the writer and waits for it; stopping twice is harmless.
func (w *writer) stop() {
	w.cancel()
	w.wg.Wait()
}
