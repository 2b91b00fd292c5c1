package main

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

// distribution returns the nearest-rank percentiles of ds: p99 of 100
// values is the 99th smallest.
func distribution(ds []time.Duration) Distribution {
	d := Distribution{N: len(ds)}
	if len(ds) == 0 {
		return d
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return ms(s[max(i, 0)])
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	d.P50, d.P90, d.P99, d.Max = rank(50), rank(90), rank(99), ms(s[len(s)-1])
	d.Mean = ms(sum / time.Duration(len(s)))
	return d
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func seconds(d time.Duration) float64 { return round(d.Seconds(), 3) }

func mib(bytes int64) float64 { return round(float64(bytes)/(1<<20), 1) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
