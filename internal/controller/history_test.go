package controller

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestHistory(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	tests := map[string]struct {
		writes       [][3]string // over, old, new
		version      string
		wantStale    bool
		wantRestored map[string]bool
	}{
		"nothing written: nothing known": {
			version:      "1",
			wantRestored: map[string]bool{"s0": false, "": false},
		},
		"a replaced state is restored, the current one is not": {
			writes:       [][3]string{{"1", "s0", "s1"}},
			version:      "5",
			wantRestored: map[string]bool{"s0": true, "s1": false},
		},
		"the version nudge patched is stale": {
			writes:    [][3]string{{"1", "s0", "s1"}},
			version:   "1",
			wantStale: true,
		},
		"a first sight replaces nothing, and is not remembered": {
			writes:       [][3]string{{"1", "", "s1"}},
			version:      "1",
			wantRestored: map[string]bool{"": false, "s1": false},
		},
		"a first sight after a known write moves the version": {
			writes:       [][3]string{{"1", "s0", "s1"}, {"2", "", "s2"}},
			version:      "2",
			wantStale:    true,
			wantRestored: map[string]bool{"s0": true, "s1": false},
		},
		"a state nudge writes again is current, not restored": {
			writes:       [][3]string{{"1", "s0", "s1"}, {"2", "s1", "s0"}},
			version:      "3",
			wantRestored: map[string]bool{"s0": false, "s1": true},
		},
		"only the last four replaced states are kept": {
			writes: [][3]string{{"1", "s0", "s1"}, {"2", "s1", "s2"}, {"3", "s2", "s3"}, {"4", "s3", "s4"}, {"5", "s4", "s5"}},
			wantRestored: map[string]bool{
				"s0": false, "s1": true, "s2": true, "s3": true, "s4": true, "s5": false,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var h history
			for _, w := range tc.writes {
				h.wrote(web, w[0], w[1], w[2])
			}
			g.Expect(h.stale(web, tc.version)).To(Equal(tc.wantStale), "stale")
			for state, want := range tc.wantRestored {
				g.Expect(h.restored(web, state)).To(Equal(want), fmt.Sprintf("restored(%q)", state))
				g.Expect(h.restored(api, state)).To(BeFalse(), "another workload")
			}
			h.forget(web)
			g.Expect(h.restored(web, "s0")).To(BeFalse(), "forgotten")
		})
	}
}
