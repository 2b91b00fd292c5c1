package binding_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// One Secret bound by more bindings than nudge has workers: a rotation
// reaches every target, then every binding's status records the new
// fingerprint (written after the applies, see docs/value-bindings.md), and
// every binding gets its Applied Event (written after a pause in the
// applies).
func TestFanOutReachesEveryTargetAndStatus(t *testing.T) {
	const n = 24
	e := setup(t, true, func(o *options.Options) { o.ValueBindingWorkers = 4 })
	e.create(nt.Secret(e.ns, "shared", map[string]string{"accesskey": "AKIAFANOUT000001"}))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("harbor-%02d", i)
		e.argoApply(harbor(e.ns, names[i]))
		e.create(valueBinding(e.ns, names[i], names[i], fromSecret("spec.imageChartStorage.s3.accesskey", "shared", "accesskey")))
	}
	fingerprints := e.appliedFingerprints(n)
	values := func() []any {
		out := make([]any, n)
		for i, name := range names {
			out[i] = e.field(name, accessKey...)()
		}
		return out
	}
	e.g.Eventually(values).WithTimeout(60*time.Second).Should(HaveEach(Equal("AKIAFANOUT000001")), "every Harbor holds the first value")
	e.g.Eventually(fingerprints).WithTimeout(60*time.Second).Should(ConsistOf(Not(BeEmpty())),
		"every binding's status records the same first fingerprint")
	before := fingerprints()[0]

	e.updateSecret("shared", map[string]string{"accesskey": "AKIAFANOUT000002"})
	e.g.Eventually(values).WithTimeout(60*time.Second).Should(HaveEach(Equal("AKIAFANOUT000002")), "every Harbor holds the rotated value")
	e.g.Eventually(fingerprints).WithTimeout(60*time.Second).Should(ConsistOf(And(Not(BeEmpty()), Not(Equal(before)))),
		"every binding's status records the rotated Secret's fingerprint")
	e.g.Eventually(func() map[string]bool {
		got := map[string]bool{}
		for _, ev := range e.events(v1alpha1.ReasonApplied)() {
			got[ev.Regarding.Name] = true
		}
		return got
	}).WithTimeout(60*time.Second).Should(HaveLen(n), "every binding has its Applied Event")
	e.g.Consistently(values).WithTimeout(3*time.Second).Should(HaveEach(Equal("AKIAFANOUT000002")), "the targets keep the rotated value")
}

// The watch event of nudge's own apply reconciles nothing: no binding is
// reconciled again within 90 ms of its apply (before, the event of its
// apply, and a reconcile 1 ms later that found the target cache behind,
// each queued it again within milliseconds, taking a worker from the
// applies still queued). What follows an apply is the status write, once
// no target has been written for 100 ms (the Lull), or a fallback 5 s
// later: on a quiet machine, two reconciles a binding per change.
func TestOwnApplyReconcilesNothing(t *testing.T) {
	const n = 24
	e := setup(t, true, func(o *options.Options) { o.ValueBindingWorkers = 4 })
	e.create(nt.Secret(e.ns, "shared", map[string]string{"accesskey": "AKIAFANOUT000001"}))
	for i := range n {
		name := fmt.Sprintf("harbor-%02d", i)
		e.argoApply(harbor(e.ns, name))
		e.create(valueBinding(e.ns, name, name, fromSecret("spec.imageChartStorage.s3.accesskey", "shared", "accesskey")))
	}
	e.g.Eventually(e.appliedFingerprints(n)).WithTimeout(60*time.Second).Should(ConsistOf(Not(BeEmpty())),
		"every binding's status records the first fingerprint")
	before := e.appliedFingerprints(n)()[0]
	mark := len(e.nudge.Logs())

	e.updateSecret("shared", map[string]string{"accesskey": "AKIAFANOUT000002"})
	e.g.Eventually(e.appliedFingerprints(n)).WithTimeout(60*time.Second).Should(ConsistOf(And(Not(BeEmpty()), Not(Equal(before)))),
		"every binding's status records the rotated Secret's fingerprint")
	// A map: encoding/json matches struct fields without regard to case,
	// and each line holds "ValueBinding" too.
	type entry = map[string]any
	applied := map[string]entry{} // each binding's apply of the rotation
	reconciles := map[string]int{}
	var soon []string
	for line := range strings.Lines(e.nudge.Logs()[mark:]) {
		var m entry
		if json.Unmarshal([]byte(line), &m) != nil || m["valuebinding"] == nil {
			continue
		}
		b := fmt.Sprint(m["valuebinding"])
		switch m["msg"] {
		case "Applied ValueBinding":
			applied[b] = m
		case "Reconciled ValueBinding":
			reconciles[b]++
			a, ok := applied[b]
			if !ok || m["reconcileID"] == a["reconcileID"] {
				continue
			}
			// ts: seconds since the epoch, as controller-runtime's zap logs it.
			after, _ := m["ts"].(float64)
			at, _ := a["ts"].(float64)
			if after-at < 0.09 {
				soon = append(soon, fmt.Sprintf("%s %.0f ms after its apply", b, 1000*(after-at)))
			}
		}
	}
	e.g.Expect(applied).To(HaveLen(n), "every binding applied once for the rotation")
	e.g.Expect(soon).To(BeEmpty(), "no binding reconciled again just after its apply")
	t.Logf("reconciles after the rotation: %v", reconciles)
}

// appliedFingerprints returns the distinct applied fingerprints of the
// namespace's bindings, "" for one not Ready (Applied) for its generation;
// nil until n bindings exist.
func (e *env) appliedFingerprints(n int) func() []string {
	return func() []string {
		var list v1alpha1.ValueBindingList
		e.g.Expect(suite.K8s.List(e.ctx, &list, client.InNamespace(e.ns))).To(Succeed())
		if len(list.Items) < n {
			return nil
		}
		seen := map[string]bool{}
		for _, b := range list.Items {
			c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
			if c == nil || c.Reason != v1alpha1.ReasonApplied || b.Status.ObservedGeneration != b.Generation {
				seen[""] = true
				continue
			}
			seen[b.Status.AppliedFingerprint] = true
		}
		return slices.Sorted(maps.Keys(seen))
	}
}
