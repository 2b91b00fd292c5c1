package sources

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// seenAt is an entry of Recent that is old Young after at.
type seenAt struct{ at time.Time }

func (s seenAt) Old(now time.Time) bool { return now.Sub(s.at) > Young }

// TestRecent: what Recent returns and what its sweep drops.
func TestRecent(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		puts    map[string]time.Duration // key → when, after t0, it is put (and seen)
		put     time.Duration            // when a last entry "z" is put
		get     time.Duration            // when "a" is asked for
		want    bool                     // "a" is returned
		wantLen int                      // entries held after the last put
	}{
		"an entry is returned while it is not old": {
			puts: map[string]time.Duration{"a": 0}, put: time.Second, get: Young, want: true, wantLen: 2,
		},
		"an old entry is not returned": {
			puts: map[string]time.Duration{"a": 0}, put: time.Second, get: Young + time.Second, wantLen: 2,
		},
		"a put drops the old entries": {
			puts: map[string]time.Duration{"a": 0, "b": 0, "c": Young / 2}, put: Young + time.Second, get: Young + time.Second, wantLen: 2,
		},
		"a put sweeps at most every quarter of Young: an old entry waits for the next sweep": {
			puts: map[string]time.Duration{"a": 0, "b": Young - time.Second}, put: Young + time.Second, get: Young + time.Second, wantLen: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var r Recent[string, seenAt]
			for _, k := range []string{"a", "b", "c"} {
				if d, ok := tc.puts[k]; ok {
					r.Put(k, seenAt{t0.Add(d)}, t0.Add(d))
				}
			}
			r.Put("z", seenAt{t0.Add(tc.put)}, t0.Add(tc.put))
			_, ok := r.Get("a", t0.Add(tc.get))
			g.Expect(ok).To(Equal(tc.want))
			g.Expect(r.Len()).To(Equal(tc.wantLen))
		})
	}
}
