package binding_test

import (
	"fmt"
	"maps"
	"slices"
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
	// fingerprints returns the distinct applied fingerprints of the
	// bindings, "" for one not Ready (Applied) for its generation; nil
	// until every binding exists.
	fingerprints := func() []string {
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
