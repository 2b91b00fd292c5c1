package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is one benchmark run: the population, the scenarios and the
// controller under test. Counts of sources are per namespace; counts of
// Deployments are totals.
type Config struct {
	// Population.
	Namespaces  int // namespaces holding the sources and Deployments
	Secrets     int // Secrets per namespace
	ConfigMaps  int // ConfigMaps per namespace
	Deployments int // Deployments over all namespaces, each using 2 Secrets and 2 ConfigMaps
	SourceBytes int // bytes of data per source
	Keys        int // keys per source, sharing SourceBytes
	FanOut      int // Deployments using the single fan-out ConfigMap (own namespace)

	// Scenarios and their sizes.
	Scenarios   []string
	Latency     int           // sequential single changes
	Burst       int           // Secrets changed at once
	NoOp        int           // label-only changes
	Coalesce    int           // changes to one ConfigMap ...
	CoalesceGap time.Duration // ... this far apart
	Downtime    int           // changes while the controller is stopped

	SteadyRate    float64       // changes a second in the steady streams ...
	SteadySources int           // ... spread over this many sources, one Deployment each ...
	SteadyFor     time.Duration // ... for this long
	// The random streams: RandomRate updates a second (RandomRestartRate
	// in random-restart, whose controller is killed and restarted at
	// RandomRestartAt) for RandomFor, each to the ConfigMap of one of
	// RandomSources Deployments picked by a random generator seeded with
	// RandomSeed (plus the run's index), RandomRuns times, each run on the
	// controller and on the floor (FloorCmd).
	RandomRate        float64
	RandomSources     int
	RandomFor         time.Duration
	RandomSeed        int64
	RandomRestartRate float64
	RandomRestartAt   time.Duration
	RandomRuns        int

	ChurnFor    time.Duration // Deployments created for this long, ...
	ChurnEvery  time.Duration // ... one every ChurnEvery, ...
	ChurnLife   time.Duration // ... each deleted this long after its creation; ...
	ChurnChange time.Duration // ... their shared ConfigMap changed this often

	LargeSources int      // Secrets, and as many ConfigMaps, of the large scenario ...
	LargeBytes   int      // ... of this many bytes of data each, in Keys keys, ...
	LargeChanges int      // ... each changed this many times
	Kinds        []string // workload kinds of the kinds scenario (see allKinds)

	BindingLatency int // sequential Secret changes, each bound into one Harbor
	BindingFanOut  int // Harbors bound to the one shared Secret

	FloorCmd     string // the floor controller's command line (floor scenario)
	FloorRounds  int    // rounds of the floor scenario
	FloorLatency int    // sequential changes per turn of the floor scenario
	// FloorStreamFor is the length of each turn's two steady streams in
	// the floor scenario, the second with a kill -9 and restart halfway
	// (0: none).
	FloorStreamFor time.Duration

	// Timing.
	Idle          time.Duration // quiet time after sync before idle figures
	Settle        time.Duration // quiet time that catches unwanted rollouts
	Window        time.Duration // controller's rollout window: wait for trailing rollouts
	ChangeTimeout time.Duration // wait for one change's rollout
	WaitTimeout   time.Duration // wait for many rollouts (fan-out, burst)
	DowntimeWait  time.Duration // wait for the changes made while the controller was stopped
	SyncTimeout   time.Duration // wait from start to synced

	// Controller under test.
	ControllerCmd      string
	ControllerName     string // column name in reports
	ControllerUser     string
	ControllerGroup    string
	BaselineAnnotation string // metadata annotation a first-sight write sets ("" = none)

	// Harness.
	Creators   int           // parallel creators
	JSON       string        // JSON output path
	MD         string        // markdown output path
	WorkDir    string        // controller logs and kubeconfig; temporary when empty
	Keep       bool          // keep the plane's and controller's logs
	ProfileFor time.Duration // CPU profile of the start, with {pprof-addr}
	ScaleRun   bool          // preset, see scalePreset

	// Shards, when above 0, runs the shards scenario last (see
	// bench.shards): that many controllers with --shard; ShardGate runs
	// kube-apiserver with ShardedListAndWatch; ShardChanges are the
	// changes made while the shards run. ShardsOnly skips the single
	// controller (sync, idle, scenarios): the shards start on the freshly
	// populated cluster and write the first-sight baselines themselves.
	Shards       int
	ShardGate    bool
	ShardChanges int
	ShardsOnly   bool
	// MemoryWindow is how long the shards scenario samples each process's
	// memory, every second, once it is quiet.
	MemoryWindow time.Duration
	BinDir       string // control-plane binaries (testbed default when empty)
	// Cgroup is a memory cgroup directory (v2, or v1's memory
	// controller) in which the controller under test runs in a child of
	// its own ("": none), for its working set as the kubelet computes it.
	Cgroup string
	// RestartCmds are controllers started one after another once the
	// scenarios are done, over the same cluster (see bench.restarts).
	RestartCmds []string
}

// allScenarios lists every scenario in the order they run. "sync" and
// "idle" always run: every other scenario needs a synced controller.
var allScenarios = []string{"latency", "fanout", "burst", "noop", "coalesce", "downtime", "bindings", "steady", "churn", "restart", "random", "random-restart", "large", "kinds", "floor"}

// defaultControllerCmd runs bin/nudge as it ships, apart from the addresses
// of its servers (free ports, so that runs never collide), with value
// bindings on for the bindings scenario's Harbors, and without the storm
// brake: the streams roll their Deployments more than 30 times an hour on
// purpose, to measure every rollout against a floor that has no brake.
const defaultControllerCmd = "bin/nudge --kubeconfig {kubeconfig} --system-namespace nudge-system " +
	"--metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr} " +
	"--max-rollouts-per-hour=0 --value-bindings --value-binding-targets=" + bindingTargets

// defaultFloorCmd runs the floor controller as make bench builds it, with
// an Event per rollout written as nudge writes its own (--events): the
// figures that count a rollout's Event then compare what both send, and
// the Event, once the rollouts pause, leaves the speed figures alone. Drop
// --events for the bare floor, whose CPU per rollout leaves out the Event
// that nudge pays (docs/performance.md).
const defaultFloorCmd = "bin/bench-floor --kubeconfig {kubeconfig} --events"

// parseConfig returns the configuration of args. -scale-run sets the scale
// run's preset for every flag not given explicitly.
func parseConfig(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&c.Namespaces, "namespaces", 10, "namespaces holding the sources and Deployments")
	fs.IntVar(&c.Secrets, "secrets", 200, "Secrets per namespace")
	fs.IntVar(&c.ConfigMaps, "configmaps", 200, "ConfigMaps per namespace")
	fs.IntVar(&c.Deployments, "deployments", 1000, "Deployments in all, spread over the namespaces; each uses 2 Secrets and 2 ConfigMaps")
	fs.IntVar(&c.SourceBytes, "source-bytes", 8192, "bytes of data in each source")
	fs.IntVar(&c.Keys, "keys", 4, "keys in each source")
	fs.IntVar(&c.FanOut, "fanout", 500, "Deployments sharing the fan-out ConfigMap, in a namespace of their own (0: no fan-out scenario)")
	scenarios := fs.String("scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios after sync and idle: "+strings.Join(allScenarios, ", "))
	fs.IntVar(&c.Latency, "latency", 100, "sequential single changes in the latency scenario")
	fs.IntVar(&c.Burst, "burst", 200, "Secrets changed at once in the burst scenario")
	fs.IntVar(&c.NoOp, "noop", 100, "label-only changes in the no-op scenario")
	fs.IntVar(&c.Coalesce, "coalesce", 10, "changes to one ConfigMap in the coalescing scenario")
	fs.DurationVar(&c.CoalesceGap, "coalesce-gap", 50*time.Millisecond, "time between the coalescing scenario's changes")
	fs.IntVar(&c.Downtime, "downtime", 20, "changes made while the controller is stopped")
	fs.Float64Var(&c.SteadyRate, "steady-rate", 20, "changes a second in the steady and restart scenarios")
	fs.IntVar(&c.SteadySources, "steady-sources", 100, "sources the steady streams spread their changes over, each used by one Deployment")
	fs.DurationVar(&c.SteadyFor, "steady-for", 20*time.Second, "length of each steady stream")
	fs.Float64Var(&c.RandomRate, "random-rate", 20, "updates a second in the random scenario")
	fs.IntVar(&c.RandomSources, "random-sources", 100, "Deployments of each random stream, each update changing the ConfigMap of one picked at random")
	fs.DurationVar(&c.RandomFor, "random-for", 60*time.Second, "length of each random stream")
	fs.Int64Var(&c.RandomSeed, "random-seed", 1, "seed of the random streams' picks; run i (from 0) uses this plus i, on both sides")
	fs.Float64Var(&c.RandomRestartRate, "random-restart-rate", 5, "updates a second in the random-restart scenario")
	fs.DurationVar(&c.RandomRestartAt, "random-restart-at", 10*time.Second, "when the random-restart scenario kills (SIGKILL) the controller and starts it again, from its stream's start")
	fs.IntVar(&c.RandomRuns, "random-runs", 1, "runs of each random scenario, one after another; each runs the stream on the controller and on the floor (-floor-cmd)")
	fs.DurationVar(&c.ChurnFor, "churn-for", 20*time.Second, "how long the churn scenario creates Deployments")
	fs.DurationVar(&c.ChurnEvery, "churn-every", 250*time.Millisecond, "time between the churn scenario's Deployment creations")
	fs.DurationVar(&c.ChurnLife, "churn-life", 2500*time.Millisecond, "how long each churned Deployment lives")
	fs.DurationVar(&c.ChurnChange, "churn-change", 2*time.Second, "time between changes of the churned Deployments' shared ConfigMap")
	fs.IntVar(&c.LargeSources, "large-sources", 20, "Secrets, and as many ConfigMaps, of the large scenario, each used by one Deployment")
	fs.IntVar(&c.LargeBytes, "large-bytes", 900<<10, "bytes of data in each source of the large scenario, in -keys keys (the API server takes at most 1 MiB)")
	fs.IntVar(&c.LargeChanges, "large-changes", 3, "changes of each source of the large scenario, made one after another")
	kinds := fs.String("kinds", strings.Join(allKinds, ","), "comma-separated workload kinds of the kinds scenario: "+strings.Join(allKinds, ", ")+" (Rollout installs Argo Rollouts' CRD before the controller starts)")
	fs.IntVar(&c.BindingLatency, "binding-latency", 100, "sequential Secret changes in the bindings scenario, each bound into one Harbor")
	fs.IntVar(&c.BindingFanOut, "binding-fanout", 1000, "Harbors bound to one shared Secret in the bindings scenario (0: no fan-out)")
	fs.StringVar(&c.FloorCmd, "floor-cmd", defaultFloorCmd, "command line of the floor controller in the floor scenario, as -controller-cmd")
	fs.IntVar(&c.FloorRounds, "floor-rounds", 6, "rounds of the floor scenario: in each, the controller and the floor take one turn each (fan-out, burst, -floor-latency changes, value-binding fan-out); each figure's ratio is the median of the rounds' own")
	fs.IntVar(&c.FloorLatency, "floor-latency", 100, "sequential single changes in each turn of the floor scenario")
	fs.DurationVar(&c.FloorStreamFor, "floor-stream-for", 10*time.Second, "length of each turn's two steady streams in the floor scenario (-steady-rate changes a second over -steady-sources sources), the second with a kill -9 and restart halfway; 0: none")
	fs.DurationVar(&c.Idle, "idle", 10*time.Second, "quiet time after sync before the idle figures are taken")
	fs.DurationVar(&c.Settle, "settle", 3*time.Second, "quiet time after a scenario that catches unwanted rollouts")
	fs.DurationVar(&c.Window, "window", 5*time.Second, "the controller's rollout window (trailing rollouts are awaited this long)")
	fs.DurationVar(&c.ChangeTimeout, "change-timeout", 10*time.Second, "wait for the rollout of one change before counting a miss")
	fs.DurationVar(&c.WaitTimeout, "wait-timeout", 90*time.Second, "wait for the rollouts of the fan-out and burst scenarios")
	fs.DurationVar(&c.DowntimeWait, "downtime-timeout", 30*time.Second, "wait after the restart for the changes made while the controller was stopped")
	fs.DurationVar(&c.SyncTimeout, "sync-timeout", 5*time.Minute, "wait from the controller's start until it is synced")
	fs.StringVar(&c.ControllerCmd, "controller-cmd", defaultControllerCmd, "command line of the controller under test, run by sh -c 'exec …'; {kubeconfig} is its kubeconfig, {metrics-addr}, {probe-addr} and {pprof-addr} free 127.0.0.1 addresses (/readyz is polled at {probe-addr}; profiles are taken from {pprof-addr})")
	fs.StringVar(&c.ControllerName, "name", "", "name of the controller in reports (default: the command's first word)")
	fs.StringVar(&c.ControllerUser, "controller-user", "nudge-bench", "user name of the controller's client certificate")
	fs.StringVar(&c.ControllerGroup, "controller-group", "system:masters", "group of the controller's client certificate")
	fs.StringVar(&c.BaselineAnnotation, "baseline-annotation", "nudge.dev/applied-fingerprint", `metadata annotation the controller writes at first sight; synced waits until every workload has it, if the controller writes it at all ("" to skip)`)
	fs.IntVar(&c.Creators, "creators", 32, "parallel creators of the objects")
	fs.StringVar(&c.JSON, "json", "", "write the results as JSON to this file")
	fs.StringVar(&c.MD, "md", "", "write the markdown report to this file too")
	fs.StringVar(&c.WorkDir, "workdir", "", "directory for the controller's kubeconfig and log (temporary when empty)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the plane's logs (audit log included) and the work directory")
	fs.DurationVar(&c.ProfileFor, "profile", 10*time.Second, "with {pprof-addr} in -controller-cmd: length of the CPU profiles of the start and of the latency scenario (fan-out and burst get 4 s each, idle a heap profile), saved in the work directory")
	fs.BoolVar(&c.ScaleRun, "scale-run", false, "scale run: 250 namespaces × (200 Secrets + 200 ConfigMaps), 25,000 Deployments; sync, idle and latency (flags given explicitly win)")
	fs.IntVar(&c.Shards, "shards", 0, "after the scenarios, stop the controller and start this many with --shard over the same cluster: each one's memory and bytes received, and a round of changes (0: no shards scenario)")
	fs.BoolVar(&c.ShardGate, "shard-gate", true, "with -shards, run kube-apiserver with the ShardedListAndWatch feature gate")
	fs.BoolVar(&c.ShardsOnly, "shards-only", false, "with -shards, start the shards on the freshly populated cluster without running the single controller first (no sync, idle, scenarios nor ratios to it): the shards write the first-sight baselines themselves, and must roll nothing at their start")
	fs.IntVar(&c.ShardChanges, "shard-changes", 40, "with -shards, sources changed while the shards run, each used by one Deployment")
	fs.DurationVar(&c.MemoryWindow, "memory-window", 40*time.Second, "with -shards, how long each controller's memory is sampled, every second, once it is quiet (the ratios compare the maxima, and the medians); longer than anything an idle controller does periodically")
	fs.StringVar(&c.Cgroup, "cgroup", "", "memory cgroup directory (v2, or v1's memory controller, e.g. /sys/fs/cgroup/memory/…) in which to run the controller under test in a child of its own, its binary first dropped from the page cache as a container's: the idle figures add its working set as the kubelet computes it (usage minus inactive file pages), now and at its peak since start")
	fs.Func("restart-cmd", "after the scenarios (before -shards), stop the controller and start this command line instead, as -controller-cmd, over the same cluster: synced when its probe rolls, then idle for -idle, then its memory (RSS, and with -cgroup the working set, now and at its peak); repeat the flag for more, each run after the one before", func(s string) error {
		c.RestartCmds = append(c.RestartCmds, s)
		return nil
	})
	fs.StringVar(&c.BinDir, "kube-bins", "", "directory of the control-plane binaries (default: the testbed's)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.Scenarios = splitList(*scenarios)
	c.Kinds = splitList(*kinds)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.ScaleRun {
		scalePreset(&c, set)
	}
	if c.ShardsOnly && !set["scenarios"] {
		c.Scenarios = nil // they need the single controller
	}
	if c.ControllerName == "" {
		c.ControllerName = strings.Fields(c.ControllerCmd + " controller")[0]
		c.ControllerName = c.ControllerName[strings.LastIndex(c.ControllerName, "/")+1:]
	}
	return c, c.validate()
}

// scalePreset sets the scale run's values of every flag not in set.
func scalePreset(c *Config, set map[string]bool) {
	preset := map[string]func(){
		"namespaces":   func() { c.Namespaces = 250 },
		"secrets":      func() { c.Secrets = 200 },
		"configmaps":   func() { c.ConfigMaps = 200 },
		"deployments":  func() { c.Deployments = 25000 },
		"fanout":       func() { c.FanOut = 0 },
		"scenarios":    func() { c.Scenarios = []string{"latency"} },
		"sync-timeout": func() { c.SyncTimeout = 10 * time.Minute },
	}
	for name, apply := range preset {
		if !set[name] {
			apply()
		}
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Namespaces < 1 || c.Secrets < 2 || c.ConfigMaps < 2 || c.Deployments < 1 {
		errs = append(errs, errors.New("-namespaces and -deployments must be at least 1, -secrets and -configmaps at least 2"))
	}
	if c.Keys < 1 || c.SourceBytes < c.Keys*16 {
		errs = append(errs, errors.New("-keys must be at least 1 and -source-bytes at least 16 per key"))
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(allScenarios, s) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ", ")))
		}
	}
	if c.Has("fanout") && c.FanOut < 1 {
		errs = append(errs, errors.New("the fanout scenario needs -fanout of at least 1"))
	}
	if c.Has("floor") && (c.FanOut < 1 || c.FloorRounds < 1 || c.FloorLatency < 1 || !strings.Contains(c.FloorCmd, "{kubeconfig}")) {
		errs = append(errs, errors.New("the floor scenario needs -fanout, -floor-rounds and -floor-latency of at least 1, and {kubeconfig} in -floor-cmd"))
	}
	if (c.Has("steady") || c.Has("restart")) && !c.streams(c.SteadyFor) {
		errs = append(errs, errors.New("the steady and restart scenarios need a positive -steady-rate, -steady-sources of at least 1 and -steady-for of at least two changes"))
	}
	if c.Has("floor") && c.FloorStreamFor != 0 && !c.streams(c.FloorStreamFor) {
		errs = append(errs, errors.New("the floor scenario's streams need a positive -steady-rate, -steady-sources of at least 1 and -floor-stream-for of at least two changes (or 0)"))
	}
	if random := c.Has("random") || c.Has("random-restart"); random && (c.RandomSources < 1 || c.RandomRuns < 1 ||
		!strings.Contains(c.FloorCmd, "{kubeconfig}")) {
		errs = append(errs, errors.New("the random scenarios need -random-sources and -random-runs of at least 1, and {kubeconfig} in -floor-cmd"))
	}
	if c.Has("random") && (c.RandomRate <= 0 || c.RandomFor < time.Duration(float64(2*time.Second)/c.RandomRate)) {
		errs = append(errs, errors.New("the random scenario needs a positive -random-rate and -random-for of at least two updates"))
	}
	if c.Has("random-restart") && (c.RandomRestartRate <= 0 || c.RandomRestartAt <= 0 || c.RandomRestartAt >= c.RandomFor) {
		errs = append(errs, errors.New("the random-restart scenario needs a positive -random-restart-rate, and -random-restart-at above 0 and below -random-for"))
	}
	if c.Has("churn") && (c.ChurnEvery <= 0 || c.ChurnChange <= 0 || c.ChurnLife <= 0 || c.ChurnFor < c.ChurnChange) {
		errs = append(errs, errors.New("the churn scenario needs positive -churn-every, -churn-life and -churn-change, and -churn-for of at least -churn-change"))
	}
	if c.Has("large") && (c.LargeSources < 1 || c.LargeChanges < 1 || c.LargeBytes < c.Keys*16 || c.LargeBytes > 1<<20) {
		errs = append(errs, errors.New("the large scenario needs -large-sources and -large-changes of at least 1, and -large-bytes of 16 per key up to 1 MiB"))
	}
	for _, k := range c.Kinds {
		if !slices.Contains(allKinds, k) {
			errs = append(errs, fmt.Errorf("unknown kind %q (known: %s)", k, strings.Join(allKinds, ", ")))
		}
	}
	if c.Has("kinds") && len(c.Kinds) == 0 {
		errs = append(errs, errors.New("the kinds scenario needs at least one kind in -kinds"))
	}
	if c.Has("bindings") && c.BindingLatency < 1 {
		errs = append(errs, errors.New("the bindings scenario needs -binding-latency of at least 1"))
	}
	if !strings.Contains(c.ControllerCmd, "{kubeconfig}") {
		errs = append(errs, errors.New("-controller-cmd must contain {kubeconfig}"))
	}
	if c.Shards < 0 || (c.Shards > 0 && c.ShardChanges < 1) {
		errs = append(errs, errors.New("-shards must not be negative, and -shard-changes must be at least 1 with -shards"))
	}
	if c.ShardsOnly && (c.Shards < 1 || len(c.Scenarios) > 0 || len(c.RestartCmds) > 0) {
		errs = append(errs, errors.New("-shards-only needs -shards of at least 1, and runs no scenario (-scenarios '') nor -restart-cmd: they need the single controller"))
	}
	if c.Shards > 0 && c.MemoryWindow < time.Second {
		errs = append(errs, errors.New("-memory-window must be at least 1s with -shards"))
	}
	if c.Creators < 1 {
		errs = append(errs, errors.New("-creators must be at least 1"))
	}
	return errors.Join(errs...)
}

// streams reports whether a steady stream of length d makes at least two
// changes.
func (c *Config) streams(d time.Duration) bool {
	return c.SteadyRate > 0 && c.SteadySources >= 1 && d >= time.Duration(float64(2*time.Second)/c.SteadyRate)
}

// Has reports whether scenario runs.
func (c *Config) Has(scenario string) bool { return slices.Contains(c.Scenarios, scenario) }

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
