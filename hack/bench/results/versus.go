package results

import (
	"fmt"
	"strings"
	"time"

	"nudge.dev/nudge/hack/bench/stats"
)

// Versus is the floor scenario: each side's figures, one per round
// (latencies pooled over the rounds), and the ratios of the controller's
// medians to the floor's.
type Versus struct {
	Rounds   int    `json:"rounds"`
	FloorCmd string `json:"floor_cmd"`
	// Workloads: the rollouts of each turn's fan-out, burst and sequential
	// changes, by which their CPU and requests are divided.
	Workloads  VersusWorkloads `json:"workloads"`
	Controller VersusSide      `json:"controller"`
	Floor      VersusSide      `json:"floor"`
	Ratios     []Ratio         `json:"ratios"`
}

// VersusSide is one side's figures: seconds until every workload rolled (or
// every Harbor held the value), one per round; nil entries are rounds with a
// miss.
type VersusSide struct {
	FanOutSeconds []*float64         `json:"fanout_seconds"`
	BurstSeconds  []*float64         `json:"burst_seconds"`
	Latency       stats.Distribution `json:"latency"` // every round's changes
	// LatencyRounds: each round's changes alone.
	LatencyRounds []stats.Distribution `json:"latency_rounds"`
	// FanOutCPU, BurstCPU, LatencyCPU: the controller's CPU seconds for
	// each round's figure, its Events included (until the quiet after
	// it); the floor's value-binding fan-out runs in the benchmark.
	FanOutCPU  []*float64 `json:"fanout_cpu_seconds"`
	BurstCPU   []*float64 `json:"burst_cpu_seconds"`
	LatencyCPU []*float64 `json:"latency_cpu_seconds"`
	// FanOutRequests, BurstRequests, LatencyRequests: the controller's API
	// requests (audit log) per rollout of each round's figure, over the
	// same time as its CPU.
	FanOutRequests       []*float64 `json:"fanout_requests_per_rollout"`
	BurstRequests        []*float64 `json:"burst_requests_per_rollout"`
	LatencyRequests      []*float64 `json:"latency_requests_per_rollout"`
	LatencyMisses        int        `json:"latency_misses"`
	BindingFanOutSeconds []*float64 `json:"binding_fanout_seconds,omitempty"`
	// BindingStatusSeconds: the controller's only, from the change until
	// every binding's status recorded it.
	BindingStatusSeconds []*float64 `json:"binding_status_seconds,omitempty"`
	// The steady streams (-floor-stream-for): change → rollout of every
	// round's steady stream pooled, and of each alone; the longest time
	// with no rollout of the stream killed and restarted halfway; the
	// steady stream's CPU milliseconds and API requests per change, its
	// Events included; missed and doubled changes of all rounds.
	Steady                  stats.Distribution   `json:"steady,omitempty"`
	SteadyRounds            []stats.Distribution `json:"steady_rounds,omitempty"`
	RestartGapSeconds       []*float64           `json:"restart_gap_seconds,omitempty"`
	SteadyCPUPerUpdate      []*float64           `json:"steady_cpu_ms_per_update,omitempty"`
	SteadyRequestsPerUpdate []*float64           `json:"steady_requests_per_update,omitempty"`
	SteadyMissed            int                  `json:"steady_missed"`
	SteadyDoubled           int                  `json:"steady_doubled"`
	RestartMissed           int                  `json:"restart_missed"`
	RestartDoubled          int                  `json:"restart_doubled"`
	// LatencySamples and SteadySamples are every round's sequential
	// changes' and steady streams' latencies, pooled into Latency and
	// Steady; not written.
	LatencySamples []time.Duration `json:"-"`
	SteadySamples  []time.Duration `json:"-"`
}

// VersusWorkloads are the rollouts of one turn's figures.
type VersusWorkloads struct {
	FanOut  int `json:"fanout"`
	Burst   int `json:"burst"`
	Latency int `json:"latency"`
}

// Ratio is one figure of the controller over the same of the floor.
type Ratio struct {
	Figure     string  `json:"figure"`
	Controller float64 `json:"controller"` // median over the rounds, or the pooled percentile
	Floor      float64 `json:"floor"`
	Unit       string  `json:"unit"`
	// Ratio is the median of the rounds' own ratios (see versusRatios);
	// Low and High the lowest and highest of them.
	Ratio  float64  `json:"ratio"`
	Low    float64  `json:"low"`
	High   float64  `json:"high"`
	Rounds []string `json:"rounds"`           // each round's ratio
	Pooled float64  `json:"pooled,omitempty"` // latency: the ratio of the percentiles of every round's changes pooled
	Target float64  `json:"target"`           // the largest ratio the issue accepts
}

// VersusMarkdown renders the floor scenario.
func VersusMarkdown(v *Versus, controller string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nAgainst the floor, same run: %d rounds, turns in the order ABBA, one controller running at a time; floor `%s`, and an in-process server-side applier of the bound field (%d workers) for the value-binding fan-out. The ratio is the median of the rounds' own ratios (each round's %s turn over its floor turn); the two sides' columns are medians over the rounds, for the latency the percentiles of every round's changes pooled (their ratio in brackets):\n\n", v.Rounds, v.FloorCmd, ApplyFloorWorkers, controller)
	fmt.Fprintf(&b, "| figure | %s | floor | ratio | lowest–highest | each round | target | met |\n|---|---|---|---|---|---|---|---|\n", controller)
	for _, r := range v.Ratios {
		ok := r.Ratio > 0 && r.Ratio <= r.Target
		target, verdict := fmt.Sprintf("≤ %.2f ×", r.Target), met(&ok)
		if r.Target == 0 {
			target, verdict = "reported", ""
		}
		pooled := ""
		if r.Pooled > 0 {
			pooled = fmt.Sprintf(" (%.2f ×)", r.Pooled)
		}
		fmt.Fprintf(&b, "| %s | %.3f %s | %.3f %s%s | %.2f × | %.2f–%.2f | %s | %s | %s |\n", r.Figure, r.Controller, r.Unit, r.Floor, r.Unit, pooled, r.Ratio, r.Low, r.High, strings.Join(r.Rounds, ", "), target, verdict)
	}
	if c, f := v.Controller, v.Floor; len(c.RestartGapSeconds) > 0 {
		fmt.Fprintf(&b, "\nThe steady streams of every round: missed / doubled changes, %s %d / %d, floor %d / %d; killed and restarted halfway: %s %d / %d, floor %d / %d.\n",
			controller, c.SteadyMissed, c.SteadyDoubled, f.SteadyMissed, f.SteadyDoubled, controller, c.RestartMissed, c.RestartDoubled, f.RestartMissed, f.RestartDoubled)
	}
	if s := v.Controller.BindingStatusSeconds; len(s) > 0 {
		var parts []string
		for _, x := range s {
			parts = append(parts, OptSeconds(x))
		}
		fmt.Fprintf(&b, "\nEvery binding's status recorded after the value-binding fan-out's change (%s): %s s.\n", controller, strings.Join(parts, ", "))
	}
	return b.String()
}

// ApplyFloorWorkers is how many goroutines the floor scenario's in-process
// applier of the bound field runs (as hack/bench/applyfloor's default); the
// report says so.
const ApplyFloorWorkers = 64
