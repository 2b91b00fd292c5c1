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

// A rotation costs each binding two reconciles: the one that applies and
// the one that writes its status once the applies pause. The watch event
// of nudge's own apply reconciles nothing (before, it and a reconcile that
// waited for the target cache each took a worker from the applies still
// queued: about four reconciles a binding).
func TestFanOutReconcilesEachBindingTwice(t *testing.T) {
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
	reconciles := func() map[string]int {
		out := map[string]int{}
		for line := range strings.Lines(e.nudge.Logs()[mark:]) {
			// A map: encoding/json matches struct fields without regard
			// to case, and the line holds "ValueBinding" too.
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == "Reconciled ValueBinding" {
				out[fmt.Sprint(entry["valuebinding"])]++
			}
		}
		return out
	}
	total := func() int {
		sum := 0
		for _, c := range reconciles() {
			sum += c
		}
		return sum
	}
	// Past statusMaxWait (5 s): a fallback reconcile left queued would
	// have run.
	e.g.Consistently(total).WithTimeout(6*time.Second).Should(BeNumerically("<=", 2*n+n/4),
		"at most two reconciles a binding (and a few more, when an apply's watch event comes before the apply's answer)")
	e.g.Expect(reconciles()).To(HaveLen(n), "every binding reconciled")
	t.Logf("reconciles after the rotation: %v", reconciles())
}

// appliedFingerprints returns the distinct applied fingerprints of the
// namespace's bindings, "" for one not Ready (Applied) for its generation;
// nil until n bindings exist.
func (e *env) appliedFingerprints(n int) func() []string {
	return func() []string {
		var list v1alpha1.ValueBindingList
		e.g.Expect(k8s.List(e.ctx, &list, client.InNamespace(e.ns))).To(Succeed())
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
