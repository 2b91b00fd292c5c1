package binding

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestOwnApply: the watch event of nudge's own apply needs no reconcile,
// whether it comes after the apply's answer or while the apply is in
// flight; another writer's update always gets one, at once or once the
// apply is over (recheck).
func TestOwnApply(t *testing.T) {
	const b = "shop/harbor"
	type event struct {
		rv      string
		wantOwn bool
	}
	tests := map[string]struct {
		during      []event // target updates while the apply is in flight
		rv          string  // the target's resourceVersion after the apply; "" failed
		after       []event // target updates after its answer
		wantRecheck bool
	}{
		"the apply's event after its answer":  {rv: "10", after: []event{{"10", true}}},
		"the apply's event before its answer": {during: []event{{"10", true}}, rv: "10", after: []event{{"10", false}}},
		"another writer after the apply":      {rv: "10", after: []event{{"10", true}, {"11", false}}},
		"another writer first, after the answer": {
			rv: "10", after: []event{{"9", false}, {"10", true}},
		},
		"another writer while the apply is in flight": {
			during: []event{{"9", true}, {"10", true}}, rv: "10", wantRecheck: true,
		},
		"another writer after the apply, before its answer": {
			during: []event{{"10", true}, {"11", true}}, rv: "10", wantRecheck: true,
		},
		"a failed apply with an update meanwhile": {during: []event{{"9", true}}, wantRecheck: true},
		"a failed apply expects no event":         {after: []event{{"9", false}}},
		"a binding never applied":                 {after: []event{{"9", false}}, rv: "-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			o := newOverwrites()
			if tc.rv == "-" {
				for _, e := range tc.after {
					g.Expect(o.own(b, e.rv)).To(Equal(e.wantOwn), "update to %s", e.rv)
				}
				return
			}
			o.applying(b)
			for _, e := range tc.during {
				g.Expect(o.own(b, e.rv)).To(Equal(e.wantOwn), "update to %s during the apply", e.rv)
			}
			g.Expect(o.applied(b, tc.rv)).To(Equal(tc.wantRecheck), "recheck")
			for _, e := range tc.after {
				g.Expect(o.own(b, e.rv)).To(Equal(e.wantOwn), "update to %s after the apply", e.rv)
			}
		})
	}
}
