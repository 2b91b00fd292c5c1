package main

import (
	"slices"
	"strings"
	"testing"

	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
)

func ptrs(vs ...float64) []*float64 {
	out := make([]*float64, len(vs))
	for i := range vs {
		out[i] = &vs[i]
	}
	return out
}

// versusRatios: the median of the rounds' own ratios, with their lowest and
// highest, so that one slow turn moves the ratio less than the ratio of the
// two sides' medians does.
func TestVersusRatios(t *testing.T) {
	tests := map[string]struct {
		controller, floor []*float64
		want              results.Ratio // Figure, Unit and Target not compared
	}{
		"one slow controller turn does not move the median": {
			controller: ptrs(1.0, 1.0, 5.0, 1.0, 1.0),
			floor:      ptrs(1.0, 1.0, 1.0, 1.0, 1.0),
			want:       results.Ratio{Controller: 1.0, Floor: 1.0, Ratio: 1.0, Low: 1.0, High: 5.0, Rounds: []string{"1.00", "1.00", "5.00", "1.00", "1.00"}},
		},
		"a slow stretch over both turns of a round cancels": {
			// The ratio of medians would be 2.1 / 1.1 = 1.91.
			controller: ptrs(1.2, 2.4, 2.1, 1.1),
			floor:      ptrs(1.0, 2.0, 1.0, 1.0),
			want:       results.Ratio{Controller: 1.65, Floor: 1.0, Ratio: 1.2, Low: 1.1, High: 2.1, Rounds: []string{"1.20", "1.20", "2.10", "1.10"}},
		},
		"an even count takes the mean of the middle two": {
			controller: ptrs(1.0, 3.0),
			floor:      ptrs(1.0, 1.0),
			want:       results.Ratio{Controller: 2.0, Floor: 1.0, Ratio: 2.0, Low: 1.0, High: 3.0, Rounds: []string{"1.00", "3.00"}},
		},
		"a round with a miss gives no ratio": {
			controller: []*float64{ptrs(1.0)[0], nil},
			floor:      ptrs(1.0, 1.0),
			want:       results.Ratio{Rounds: []string{"a round missed"}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := &results.Versus{
				Controller: results.VersusSide{FanOutSeconds: tt.controller},
				Floor:      results.VersusSide{FanOutSeconds: tt.floor},
			}
			got := versusRatios(res)
			if len(got) != 1 {
				t.Fatalf("versusRatios gave %d ratios, want 1 (the fan-out): %+v", len(got), got)
			}
			g := got[0]
			if g.Controller != tt.want.Controller || g.Floor != tt.want.Floor || g.Ratio != tt.want.Ratio ||
				g.Low != tt.want.Low || g.High != tt.want.High || !slices.Equal(g.Rounds, tt.want.Rounds) {
				t.Errorf("versusRatios = %+v, want %+v", g, tt.want)
			}
		})
	}
}

// The latency's ratio is the median of the rounds' own percentiles' ratios;
// the pooled percentiles are kept beside it.
func TestVersusRatiosLatency(t *testing.T) {
	res := &results.Versus{
		Controller: results.VersusSide{
			Latency:       stats.Distribution{N: 300, P50: 10, P99: 40},
			LatencyRounds: []stats.Distribution{{N: 100, P50: 10, P99: 20}, {N: 100, P50: 10, P99: 90}, {N: 100, P50: 11, P99: 22}},
		},
		Floor: results.VersusSide{
			Latency:       stats.Distribution{N: 300, P50: 10, P99: 20},
			LatencyRounds: []stats.Distribution{{N: 100, P50: 10, P99: 20}, {N: 100, P50: 10, P99: 20}, {N: 100, P50: 10, P99: 20}},
		},
	}
	got := map[string]results.Ratio{}
	for _, r := range versusRatios(res) {
		got[r.Figure] = r
	}
	p50, p99 := got["change → pod template p50"], got["change → pod template p99"]
	if p50.Ratio != 1.0 || p50.Pooled != 1.0 || p50.High != 1.1 {
		t.Errorf("p50: %+v, want ratio 1.00, pooled 1.00, highest 1.10", p50)
	}
	if p99.Ratio != 1.1 || p99.Pooled != 2.0 || p99.Low != 1.0 || p99.High != 4.5 || p99.Controller != 40 || p99.Floor != 20 {
		t.Errorf("p99: %+v, want ratio 1.10 (one slow round of 3), pooled 2.00 (40 / 20 ms), 1.00–4.50", p99)
	}
}

// The steady streams give two ratios with targets, issue 22's: the steady
// stream's p99 (≤ 1.5 ×, per round as the latency's) and the longest time
// with no rollout when the controller is killed and restarted halfway
// (≤ 1.25 ×); their missed and doubled changes are said under the table.
func TestVersusStreams(t *testing.T) {
	v := &results.Versus{Rounds: 2, Controller: results.VersusSide{
		Steady:            stats.Distribution{N: 400, P99: 30},
		SteadyRounds:      []stats.Distribution{{N: 200, P99: 30}, {N: 200, P99: 24}},
		RestartGapSeconds: ptrs(1.1, 1.3),
		RestartMissed:     1,
	}, Floor: results.VersusSide{
		Steady:            stats.Distribution{N: 400, P99: 20},
		SteadyRounds:      []stats.Distribution{{N: 200, P99: 20}, {N: 200, P99: 20}},
		RestartGapSeconds: ptrs(1.0, 1.0),
		RestartMissed:     3,
	}}
	v.Ratios = versusRatios(v)
	got := map[string]results.Ratio{}
	for _, r := range v.Ratios {
		got[r.Figure] = r
	}
	steady, restart := got["steady stream: change → rollout p99"], got["restart under the stream: longest time with no rollout"]
	if steady.Ratio != 1.35 || steady.Pooled != 1.5 || steady.Target != 1.5 {
		t.Errorf("steady: %+v, want ratio 1.35 (1.50 and 1.20), pooled 1.50, target 1.5", steady)
	}
	if restart.Ratio != 1.2 || restart.Target != 1.25 {
		t.Errorf("restart: %+v, want ratio 1.20 (1.10 and 1.30), target 1.25", restart)
	}
	md := results.VersusMarkdown(v, "nudge")
	for _, want := range []string{
		"| steady stream: change → rollout p99 | 30.000 ms | 20.000 ms (1.50 ×) | 1.35 × | 1.20–1.50 | 1.50, 1.20 | ≤ 1.50 × | yes |",
		"| restart under the stream: longest time with no rollout | 1.200 s | 1.000 s | 1.20 × | 1.10–1.30 | 1.10, 1.30 | ≤ 1.25 × | yes |",
		"killed and restarted halfway: nudge 1 / 0, floor 3 / 0.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("versusMarkdown lacks\n%s\nin\n%s", want, md)
		}
	}
	found := false
	for _, tg := range results.Targets(&results.Run{Versus: v}) {
		if strings.HasPrefix(tg.Name, "the same, killed") {
			found = true
			if tg.Met == nil || *tg.Met {
				t.Errorf("target %q: met %v, want not met (the controller missed 1)", tg.Name, tg.Met)
			}
		}
	}
	if !found {
		t.Error("targets lack the restarted streams' missed / doubled")
	}
}

func TestFloorEvents(t *testing.T) {
	for _, c := range []struct {
		name, cmd string
		want      bool
	}{
		{"the default floor records Events", defaultFloorCmd, true},
		{"the bare floor records none", "bin/bench-floor --kubeconfig {kubeconfig}", false},
		{"a flag only named like it is not it", "bin/bench-floor --kubeconfig {kubeconfig} --events-off", false},
	} {
		if got := floorEvents(c.cmd); got != c.want {
			t.Errorf("%s: floorEvents(%q) = %v, want %v", c.name, c.cmd, got, c.want)
		}
	}
}

// Each figure has a target, and the table says whether it is met: the
// CPU per rollout (its Event included) and the requests per rollout are
// issue 34's, the CPU divided by the figure's rollouts.
func TestVersusMarkdownTargets(t *testing.T) {
	v := &results.Versus{Rounds: 2, Workloads: results.VersusWorkloads{FanOut: 500}, Controller: results.VersusSide{
		FanOutSeconds: ptrs(1.2, 1.2), FanOutCPU: ptrs(0.4, 0.4), FanOutRequests: ptrs(2, 2),
	}, Floor: results.VersusSide{
		FanOutSeconds: ptrs(1.0, 1.0), FanOutCPU: ptrs(0.2, 0.2), FanOutRequests: ptrs(1, 1),
	}}
	v.Ratios = versusRatios(v)
	md := results.VersusMarkdown(v, "nudge")
	for _, want := range []string{
		"| fan-out (all rolled) | 1.200 s | 1.000 s | 1.20 × | 1.20–1.20 | 1.20, 1.20 | ≤ 1.10 × | **no** |",
		"| fan-out: CPU per rollout, its Event included | 0.800 ms | 0.400 ms | 2.00 × | 2.00–2.00 | 2.00, 2.00 | ≤ 1.25 × | **no** |",
		"| fan-out: API requests per rollout | 2.000  | 1.000  | 2.00 × | 2.00–2.00 | 2.00, 2.00 | ≤ 2.00 × | yes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("versusMarkdown lacks the row\n%s\nin\n%s", want, md)
		}
	}
}
