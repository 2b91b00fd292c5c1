package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"nudge.dev/nudge/hack/bench/watch"
)

// closeGap is how soon after the previous update of its source an update
// is one the controller's rollout window may hold back (nudge's quiet time:
// a change less than 1 s after the one before waits until its sources are
// quiet for 1 s).
const closeGap = time.Second

// update is one write of a source of a random stream: the Deployment that
// uses the source (namespace/name), when the write was sent, and the
// resourceVersion the API server gave it.
type update struct {
	key string
	at  time.Time
	rv  uint64
}

// randomCheck is what checkRandom found in one random stream.
type randomCheck struct {
	// lats: from each update sent to the first rollout of its Deployment
	// after it, of the updates that rolled before the next update of their
	// source.
	lats []time.Duration
	// doubled counts the rollouts beyond the first between an update and
	// the next update of its source (or the end, for the last).
	doubled int
	// withoutUpdate counts the rollouts with no update of their source
	// since the Deployment's previous rollout (or the stream's start).
	withoutUpdate int
	// missed counts the updates with no rollout of their Deployment after
	// them within the deadline: content that did not reach the
	// Deployment. An update folded into the rollout of a later one, within
	// the deadline, is not missed.
	missed int
	// close counts the updates less than closeGap after the previous update
	// of their source.
	close int
	// rollouts counts the rollouts of the stream's Deployments, hashed
	// those with a trigger hash (Rollout.Hash), and sameContent those whose
	// hash is the same as the Deployment's rollout before's: the same
	// content of the source rolled twice.
	rollouts, hashed, sameContent int
	// odd are the Deployments with a doubled, without-update or missed,
	// in the order of keys.
	odd []string
}

// checkRandom matches the updates of a random stream to the rollouts of
// keys, the stream's Deployments (others' rollouts are left out), each
// Deployment's in resourceVersion order: a rollout is after an update when
// its resourceVersion is higher, so that one committed just before an
// update is never counted after it, however late the benchmark saw it.
// Wall-clock times serve only the latencies and the deadline: an update is
// missed when the first rollout after it was seen more than deadline after
// it was sent, or never. Every resourceVersion must be set. doubled and
// withoutUpdate count the same extra rollouts of a Deployment whose source
// changed, the latter also those of a Deployment whose source never did.
// Neither tells a rollout of stale content (a controller that decided
// before its cache saw the next update, and wrote after it) from a second
// rollout of the same content: the rollouts' trigger hashes do, where the
// controller writes one (sameContent).
func checkRandom(updates []update, rollouts []watch.Rollout, keys []string, deadline time.Duration) randomCheck {
	var c randomCheck
	byKey := map[string][]update{}
	for _, u := range updates {
		byKey[u.key] = append(byKey[u.key], u)
	}
	rolled := map[string][]watch.Rollout{}
	for _, r := range rollouts {
		if slices.Contains(keys, r.Key) {
			rolled[r.Key] = append(rolled[r.Key], r)
		}
	}
	for _, key := range keys {
		us, rs := byKey[key], rolled[key]
		c.rollouts += len(rs)
		before := c.doubled + c.withoutUpdate + c.missed
		slices.SortFunc(us, func(a, b update) int { return cmp.Compare(a.rv, b.rv) })
		slices.SortFunc(rs, func(a, b watch.Rollout) int { return cmp.Compare(a.RV, b.RV) })
		first := 0 // the first rollout after the update
		for i, u := range us {
			if i > 0 && u.at.Sub(us[i-1].at) < closeGap {
				c.close++
			}
			for first < len(rs) && rs[first].RV <= u.rv {
				first++
			}
			if first == len(rs) || rs[first].At.Sub(u.at) > deadline {
				c.missed++
			}
			next := uint64(math.MaxUint64)
			if i+1 < len(us) {
				next = us[i+1].rv
			}
			end := first
			for end < len(rs) && rs[end].RV < next {
				end++
			}
			if end > first {
				c.lats = append(c.lats, rs[first].At.Sub(u.at))
				c.doubled += end - first - 1
			}
		}
		next := 0 // the first update not before the rollout
		for i, r := range rs {
			if r.Hash != "" {
				c.hashed++
				if i > 0 && rs[i-1].Hash == r.Hash {
					c.sameContent++
				}
			}
			from := next
			for next < len(us) && us[next].rv < r.RV {
				next++
			}
			if next == from {
				c.withoutUpdate++
			}
		}
		if c.doubled+c.withoutUpdate+c.missed > before {
			c.odd = append(c.odd, key)
		}
	}
	return c
}

// timeline returns the updates and rollouts of key in resourceVersion order,
// each as u (an update) or r (a rollout), its resourceVersion and the
// milliseconds from begin when it was sent or seen, and a rollout's trigger
// hash if any: "u 1201 +15230 ms, r 1203 +15262 ms #Xw3vQk9a".
func timeline(key string, updates []update, rollouts []watch.Rollout, begin time.Time) string {
	type event struct {
		what string
		rv   uint64
		at   time.Time
		hash string
	}
	var es []event
	for _, u := range updates {
		if u.key == key {
			es = append(es, event{"u", u.rv, u.at, ""})
		}
	}
	for _, r := range rollouts {
		if r.Key == key {
			es = append(es, event{"r", r.RV, r.At, r.Hash})
		}
	}
	slices.SortFunc(es, func(a, b event) int { return cmp.Compare(a.rv, b.rv) })
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%s %d %+d ms", e.what, e.rv, e.at.Sub(begin).Milliseconds())
		if e.hash != "" {
			parts[i] += " #" + e.hash
		}
	}
	return strings.Join(parts, ", ")
}
