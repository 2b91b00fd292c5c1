package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestHistory(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	type write struct {
		over       string
		firstSight bool
	}
	tests := map[string]struct {
		writes    []write
		version   string
		wantStale bool
	}{
		"nothing written: nothing is stale": {
			version: "1",
		},
		"the version nudge patched is stale": {
			writes:    []write{{over: "1"}},
			version:   "1",
			wantStale: true,
		},
		"a later version is not": {
			writes:  []write{{over: "1"}},
			version: "2",
		},
		"a first sight of an unknown workload is not remembered": {
			writes:  []write{{over: "1", firstSight: true}},
			version: "1",
		},
		"a first sight after a known write moves the version": {
			writes:    []write{{over: "1"}, {over: "2", firstSight: true}},
			version:   "2",
			wantStale: true,
		},
		"only the last write counts": {
			writes:  []write{{over: "1"}, {over: "2"}},
			version: "1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var h history
			for _, w := range tc.writes {
				h.wrote(web, w.over, w.firstSight)
			}
			g.Expect(h.stale(web, tc.version)).To(Equal(tc.wantStale), "stale")
			g.Expect(h.stale(api, tc.version)).To(BeFalse(), "another workload")
			h.forget(web)
			g.Expect(h.stale(web, tc.version)).To(BeFalse(), "forgotten")
		})
	}
}
