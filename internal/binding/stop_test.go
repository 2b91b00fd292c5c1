package binding_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// A nudge stopped in the middle of a fan-out returns within seconds, not at
// the manager's 30 s graceful-shutdown timeout. controller-runtime v0.24's
// priority queue could hand a ready item to a worker that had already left
// on shutdown and then hold the queue's lock for good (controller-runtime
// #3538, fixed in v0.25.0); every worker that finished its reconcile waited
// for that lock until the timeout, so a nudge replaced mid-rotation kept its
// Lease 30 s and failed CI here twice. Three rounds, each a new nudge stopped
// once the rotation has reached some Harbors but not all; with v0.24.1, a
// stop 1–4 s into a fan-out of 1,000 hung in 2 of 3 tries.
func TestStopDuringAFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("three fan-outs of 400")
	}
	const n = 400
	e := setup(t, false, nil)
	e.create(nt.Secret(e.ns, "shared", map[string]string{"accesskey": "AKIASTOP0"}))
	names := harborNames(n)
	e.createHarbors(names)
	e.bindShared(names)
	for round := range 3 {
		held := fmt.Sprintf("AKIASTOP%d", round)
		nudge := e.start(nil)
		e.g.Eventually(e.holding(n)).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).
			Should(Equal(map[string]int{held: n}), "round %d: every Harbor holds %s", round, held)
		next := fmt.Sprintf("AKIASTOP%d", round+1)
		e.updateSecret("shared", map[string]string{"accesskey": next})
		e.g.Eventually(e.holding(n)).WithTimeout(time.Minute).WithPolling(20*time.Millisecond).
			Should(HaveKey(next), "round %d: the rotation to %s reaches a first Harbor", round, next)
		began := time.Now()
		nudge.StopWithin(t, 10*time.Second)
		t.Logf("Round %d: stopped mid-fan-out in %v", round, time.Since(began).Round(time.Millisecond))
		if t.Failed() {
			return
		}
	}
}
