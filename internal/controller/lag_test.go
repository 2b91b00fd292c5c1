package controller_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// TestSourceCreatedWithItsWorkloadWarnsNothing: Secrets created just before
// the Deployments that require them (as kubectl apply of one manifest
// does) give no SourceMissing Warning, though nudge's cache may see a
// Deployment before its Secret: nudge asks the API server before it warns,
// and waits for its cache. Each baseline records its Secret, and nothing
// rolls.
func TestSourceCreatedWithItsWorkloadWarnsNothing(t *testing.T) {
	e := setup(t, true, nil)
	const pairs = 200
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < pairs; i += 8 {
				e.Create(nt.Secret(e.NS, fmt.Sprintf("db-%d", i), map[string]string{"password": "p"}),
					nt.Deployment(e.NS, fmt.Sprintf("web-%d", i), 1, auto, nt.EnvFrom("Secret", fmt.Sprintf("db-%d", i))))
			}
		})
	}
	wg.Wait()
	for i := range pairs {
		name := fmt.Sprintf("web-%d", i)
		e.G.Eventually(func() string {
			return e.Deployment(name).Annotations[workload.AppliedAnnotation]
		}).WithTimeout(30*time.Second).Should(ContainSubstring(fmt.Sprintf("Secret/db-%d", i)),
			"nudge to record a baseline of %s with its Secret", name)
	}
	for i := range pairs {
		name := fmt.Sprintf("web-%d", i)
		e.G.Expect(e.Events(name, record.ReasonSourceMissing)()).To(BeEmpty(), "no SourceMissing Warning on %s", name)
		e.G.Expect(e.Rollouts(name)()).To(BeZero(), "%s not rolled", name)
	}
}
