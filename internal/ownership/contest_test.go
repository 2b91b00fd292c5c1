package ownership

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// TestTakeovers: a state of another key that returns soon after nudge took
// it over is a contest with another nudge (two shards select the
// namespace); one that nudge meets for the first time, or long after, is a
// handover (first sight, rule 3), and is written.
func TestTakeovers(t *testing.T) {
	const own, other = "0a0a0a0a", "0b0b0b0b"
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	state := func(keyID string) string {
		return fingerprint.State{KeyID: keyID, Entries: map[refs.Source]fingerprint.Entry{
			{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}: {Digest: "d"},
		}}.Format("shop")
	}
	tests := map[string]struct {
		took     string // the applied state nudge's baseline replaced at start, if any
		applied  string // the applied state found after
		after    time.Duration
		wantWait time.Duration
	}{
		"another key's state, never taken over before, is written (a handover)": {
			applied: state(other), after: time.Minute,
		},
		"another key's state back a minute after nudge took it over is left alone for the rest of the window": {
			took: state(other), applied: state(other), after: time.Minute, wantWait: contestWindow - time.Minute,
		},
		"another key's state back after the window is written again": {
			took: state(other), applied: state(other), after: contestWindow,
		},
		"a takeover of an unkeyed workload (no state) is no contest": {
			took: "", applied: state(other), after: time.Minute,
		},
		"a state of nudge's own key is no contest": {
			took: state(other), applied: state(own), after: time.Minute,
		},
		"an unreadable state is no contest": {
			took: state(other), applied: "garbage", after: time.Minute,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var tk Takeovers
			tk.Took(key, rollout.Input{Applied: tc.took, Namespace: "shop", Now: start}, own)
			wait, c := tk.Contested(key, rollout.Input{Applied: tc.applied, Namespace: "shop", Now: start.Add(tc.after)}, own)
			g.Expect(wait).To(Equal(tc.wantWait))
			if tc.wantWait > 0 {
				g.Expect(c.Reason).To(Equal(record.ReasonStateContested))
				g.Expect(c.Note).To(ContainSubstring("key " + other))
				g.Expect(c.Note).To(ContainSubstring("namespace shop"))
			}
		})
	}
}

// TestTakeoversForgetExpired: entries older than the window are dropped as
// the memory grows, so it holds the recent takeovers alone.
func TestTakeoversForgetExpired(t *testing.T) {
	g := NewWithT(t)
	var tk Takeovers
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	foreign := fingerprint.State{KeyID: "0b0b0b0b", Entries: map[refs.Source]fingerprint.Entry{}}.Format("shop")
	for i := range 1000 {
		key := types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}
		tk.Took(key, rollout.Input{Applied: foreign, Namespace: "shop", Now: start.Add(time.Duration(i) * time.Second)}, "0a0a0a0a")
	}
	g.Expect(len(tk.at)).To(BeNumerically("<=", 2*int(contestWindow/time.Second)),
		"at most about the takeovers of the last window (one a second here)")
}
