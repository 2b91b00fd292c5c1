package controller_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// TestOwnRolloutIsNotReconciledAgain: the watch event of nudge's own
// rollout reconciles nothing, even when it comes before the PATCH's answer
// (memo.History.Write): 20 changes one after another give 20 decisions
// to roll and no other, but for the first sight's one or two (its
// baseline, and its write's event when that comes after the answer, as
// first sights are not remembered). Before, 2 of 3 rollouts were
// reconciled once more, to decide nothing: 34 decisions.
func TestOwnRolloutIsNotReconciledAgain(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "0"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
	e.Baselined("web")
	decisions := func() (n int) {
		for line := range strings.Lines(e.Nudge.Logs()) {
			var entry struct{ Msg, Namespace, Name string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "Decided" && entry.Namespace == e.NS && entry.Name == "web" {
				n++
			}
		}
		return n
	}
	const changes = 20
	for i := 1; i <= changes; i++ {
		e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = string(rune('a' + i)) })
		e.G.Eventually(e.Rollouts("web")).WithTimeout(20*time.Second).Should(BeNumerically(">=", i), "rollout %d of web", i)
	}
	e.G.Eventually(decisions).WithTimeout(10*time.Second).Should(BeNumerically(">=", changes+1), "nudge to log its decisions")
	e.G.Consistently(decisions).WithTimeout(2*time.Second).Should(BeNumerically("<=", changes+2),
		"one decision per change, and the first sight's: no reconcile of nudge's own rollouts")
	e.G.Expect(e.Rollouts("web")()).To(BeNumerically("==", changes), "one rollout per change")
}
