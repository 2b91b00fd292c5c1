package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/hack/bench/watch"
)

func TestCheckRandom(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// u is an update of key's source sent at ms, written at rv; r a rollout
	// of key seen at ms, written at rv.
	u := func(key string, ms int, rv uint64) update { return update{key: key, at: at(ms), rv: rv} }
	r := func(key string, ms int, rv uint64) watch.Rollout {
		return watch.Rollout{Key: key, At: at(ms), RV: rv}
	}
	lats := func(ms ...int) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	const deadline = 15 * time.Second
	tests := map[string]struct {
		keys     []string
		updates  []update
		rollouts []watch.Rollout
		want     randomCheck
	}{
		"a lone update rolled once has its latency and nothing else": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10)},
			rollouts: []watch.Rollout{r("a", 20, 11)},
			want:     randomCheck{rollouts: 1, lats: lats(20)},
		},
		"a rollout committed just before an update counts for the update before it, though seen after it was sent": {
			// By the times seen, the first rollout (40 ms) came after the
			// second update was sent (30 ms): one update with none and one
			// with two.
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10), u("a", 30, 13)},
			rollouts: []watch.Rollout{r("a", 40, 12), r("a", 60, 14)},
			want:     randomCheck{rollouts: 2, lats: lats(40, 30), close: 1},
		},
		"two rollouts after one update: one doubled, one without update": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10)},
			rollouts: []watch.Rollout{r("a", 10, 11), r("a", 2000, 20)},
			want:     randomCheck{rollouts: 2, lats: lats(10), doubled: 1, withoutUpdate: 1},
		},
		"updates folded into one rollout within the deadline are not missed; only the last has a latency": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10), u("a", 300, 11), u("a", 500, 12)},
			rollouts: []watch.Rollout{r("a", 1500, 13)},
			want:     randomCheck{rollouts: 1, lats: lats(1000), close: 2},
		},
		"an update whose first rollout came after the deadline is missed": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10), u("a", 20000, 30)},
			rollouts: []watch.Rollout{r("a", 20010, 31)},
			want:     randomCheck{rollouts: 1, lats: lats(10), missed: 1},
		},
		"the last update of a source, never rolled, is missed": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10), u("a", 3000, 20)},
			rollouts: []watch.Rollout{r("a", 5, 11)},
			want:     randomCheck{rollouts: 1, lats: lats(5), missed: 1},
		},
		"a rollout of a Deployment whose source never changed is without update, not doubled": {
			keys:     []string{"a", "b"},
			updates:  []update{u("a", 0, 10)},
			rollouts: []watch.Rollout{r("a", 5, 11), r("b", 7, 12)},
			want:     randomCheck{rollouts: 2, lats: lats(5), withoutUpdate: 1},
		},
		"a rollout before the first update is without update": {
			keys:     []string{"a"},
			updates:  []update{u("a", 10, 10)},
			rollouts: []watch.Rollout{r("a", 0, 5), r("a", 20, 11)},
			want:     randomCheck{rollouts: 2, lats: lats(10), withoutUpdate: 1},
		},
		"a rollout after two updates of its source is one rollout with an update": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10), u("a", 2000, 20), u("a", 2500, 30)},
			rollouts: []watch.Rollout{r("a", 5, 11), r("a", 3500, 31)},
			want:     randomCheck{rollouts: 2, lats: lats(5, 1000), close: 1},
		},
		"a rollout of the same trigger hash as the one before rolled the same content twice": {
			keys:    []string{"a"},
			updates: []update{u("a", 0, 10), u("a", 2000, 20), u("a", 4000, 30)},
			rollouts: []watch.Rollout{{Key: "a", At: at(5), RV: 11, Hash: "h1"}, {Key: "a", At: at(2010), RV: 21, Hash: "h2"},
				{Key: "a", At: at(2020), RV: 22, Hash: "h2"}, {Key: "a", At: at(4010), RV: 31}},
			want: randomCheck{rollouts: 4, hashed: 3, sameContent: 1, lats: lats(5, 10, 10), doubled: 1, withoutUpdate: 1},
		},
		"rollouts of Deployments outside the stream are left out": {
			keys:     []string{"a"},
			updates:  []update{u("a", 0, 10)},
			rollouts: []watch.Rollout{r("c", 1, 9), r("a", 5, 11), r("c", 6, 12)},
			want:     randomCheck{rollouts: 1, lats: lats(5)},
		},
		"each Deployment is matched alone, in resourceVersion order whatever the order given": {
			keys:     []string{"a", "b"},
			updates:  []update{u("b", 100, 21), u("a", 0, 10), u("a", 2000, 30), u("b", 0, 11)},
			rollouts: []watch.Rollout{r("b", 120, 22), r("a", 2010, 31), r("b", 15, 12), r("a", 5, 13)},
			want:     randomCheck{rollouts: 4, lats: lats(5, 10, 15, 20), close: 1},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := checkRandom(tt.updates, tt.rollouts, tt.keys, deadline)
			g.Expect(got.lats).To(ConsistOf(tt.want.lats))
			if got.doubled+got.withoutUpdate+got.missed > 0 {
				g.Expect(got.odd).NotTo(BeEmpty(), "the Deployments with a doubled, without update or missed")
			} else {
				g.Expect(got.odd).To(BeEmpty(), "the Deployments with a doubled, without update or missed")
			}
			got.lats, tt.want.lats, got.odd = nil, nil, nil
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// The timeline of a Deployment lists its updates and rollouts in
// resourceVersion order, with milliseconds from the stream's start and each
// rollout's trigger hash if it has one.
func TestTimeline(t *testing.T) {
	g := NewWithT(t)
	begin := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return begin.Add(time.Duration(n) * time.Millisecond) }
	got := timeline("a",
		[]update{{key: "a", at: ms(30), rv: 13}, {key: "b", at: ms(1), rv: 11}, {key: "a", at: ms(0), rv: 10}},
		[]watch.Rollout{{Key: "a", At: ms(40), RV: 12, Hash: "Xw3vQk9a"}, {Key: "b", At: ms(2), RV: 14}, {Key: "a", At: ms(50), RV: 15}},
		begin)
	g.Expect(got).To(Equal("u 10 +0 ms, r 12 +40 ms #Xw3vQk9a, u 13 +30 ms, r 15 +50 ms"))
}
