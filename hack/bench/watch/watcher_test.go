package watch

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// The trigger hash is read from Reloader's last-reloaded-from annotation,
// cut to 8 characters, when the change rewrote a trigger; anything else
// gives none.
func TestTriggerHash(t *testing.T) {
	from := func(hash string, at int) string {
		return fmt.Sprintf(`{"type":"CONFIGMAP","name":"c","namespace":"n","hash":%q,"containerRefs":["app"],"observedAt":%d}`, hash, at)
	}
	tests := map[string]struct {
		before, now map[string]string
		want        string
	}{
		"a new last-reloaded-from gives its hash": {
			map[string]string{lastReloadedFrom: from("oldoldold", 1)}, map[string]string{lastReloadedFrom: from("Xw3vQk9aZZZZ", 2)}, "Xw3vQk9a"},
		"the same last-reloaded-from with a new restarted-at gives its hash (the same content rolled again)": {
			map[string]string{lastReloadedFrom: from("Xw3vQk9a", 2), "nudge.dev/restarted-at": "a"},
			map[string]string{lastReloadedFrom: from("Xw3vQk9a", 2), "nudge.dev/restarted-at": "b"}, "Xw3vQk9a"},
		"a change that rewrote no trigger gives none (the floor's)": {
			map[string]string{lastReloadedFrom: from("Xw3vQk9a", 2), "floor.bench.nudge.dev/restarted-at": "a"},
			map[string]string{lastReloadedFrom: from("Xw3vQk9a", 2), "floor.bench.nudge.dev/restarted-at": "b"}, ""},
		"a short hash is kept whole": {nil, map[string]string{lastReloadedFrom: `{"hash":"abc"}`}, "abc"},
		"no annotation gives none":   {nil, map[string]string{"nudge.dev/restarted-at": "b"}, ""},
		"not JSON gives none":        {nil, map[string]string{lastReloadedFrom: "2026-11-28"}, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(triggerHash(tt.before, tt.now)).To(Equal(tt.want))
		})
	}
}
