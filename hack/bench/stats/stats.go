// Package stats summarises durations (Distribution: nearest-rank
// percentiles, in milliseconds) and rounds figures to the units the bench
// reports them in (MS, Seconds, MiB).
package stats

import (
	"math"
	"slices"
	"time"
)

// Distribution summarises durations in milliseconds.
type Distribution struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// NewDistribution returns the nearest-rank percentiles of ds: p99 of 100
// values is the 99th smallest.
func NewDistribution(ds []time.Duration) Distribution {
	d := Distribution{N: len(ds)}
	if len(ds) == 0 {
		return d
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return MS(s[max(i, 0)])
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	d.P50, d.P90, d.P99, d.Max = rank(50), rank(90), rank(99), MS(s[len(s)-1])
	d.Mean = MS(sum / time.Duration(len(s)))
	return d
}

// MS returns d in milliseconds, to 0.1 ms.
func MS(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 1) }

// Seconds returns d in seconds, to the millisecond.
func Seconds(d time.Duration) float64 { return Round(d.Seconds(), 3) }

// MiB returns bytes in MiB, to 0.1 MiB.
func MiB(bytes int64) float64 { return Round(float64(bytes)/(1<<20), 1) }

// Round rounds v to digits decimals (half away from zero).
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
