package results

import (
	"fmt"
	"slices"
	"time"

	"nudge.dev/nudge/hack/bench/stats"
)

// Steady is a steady stream of changes, Rate a second for Seconds,
// spread over Sources sources each used by one Deployment, so that each
// Deployment's source changes every Sources/Rate seconds. With Restart, the
// controller is killed (SIGKILL) halfway and started again at once.
type Steady struct {
	Load    Load    `json:"load"`
	Rate    float64 `json:"rate"`
	Sources int     `json:"sources"`
	Seconds float64 `json:"seconds"`
	Restart bool    `json:"restart"`
	Changes int     `json:"changes"`
	// Latency is from each change sent to its Deployment's next pod-template
	// change, of the changes that rolled before the next change of the same
	// source was sent.
	Latency stats.Distribution `json:"latency"`
	// Missed changes did not roll before the next change of their source
	// (or, for the last, within -change-timeout); Doubled counts the
	// rollouts beyond one per change.
	Missed  int `json:"missed"`
	Doubled int `json:"doubled"`
	// GapSeconds is the longest time with no rollout of the stream's
	// Deployments, from the first change sent to the last rollout.
	GapSeconds float64 `json:"gap_seconds"`
	// CPUPerUpdate and RequestsPerUpdate are the controller's CPU
	// milliseconds and API requests during the scenario, per change.
	CPUPerUpdate      float64 `json:"cpu_ms_per_update"`
	RequestsPerUpdate float64 `json:"requests_per_update"`
	// Samples are each change's latency, for the floor scenario to pool
	// over its rounds; not written.
	Samples []time.Duration `json:"-"`
}

// String says what the stream was.
func (s *Steady) String() string {
	return fmt.Sprintf("%.0f changes/s over %d sources for %.0f s", s.Rate, s.Sources, s.Seconds)
}

// Random is one random scenario: Runs runs of a stream of Rate
// updates a second for Seconds over Sources Deployments, each using the
// ConfigMap it updates, on the controller and on the floor.
type Random struct {
	Rate    float64 `json:"rate"`
	Sources int     `json:"sources"`
	Seconds float64 `json:"seconds"`
	Seed    int64   `json:"seed"` // run i's is Seed + i
	// RestartAtSeconds is when the controller was killed (SIGKILL) and
	// started again at once, from the stream's start; 0: never.
	RestartAtSeconds float64     `json:"restart_at_seconds,omitempty"`
	FloorCmd         string      `json:"floor_cmd"`
	Runs             []RandomRun `json:"runs"`
}

// RandomRun is one run of a random scenario: the same picks (Seed) on each
// side, over Deployments of its own.
type RandomRun struct {
	Seed       int64      `json:"seed"`
	Controller RandomSide `json:"controller"`
	Floor      RandomSide `json:"floor"`
}

// RandomSide is one side's stream of one run, as checkRandom found it.
type RandomSide struct {
	Load    Load `json:"load"`
	Updates int  `json:"updates"`
	// Close counts the updates less than 1 s after the previous update of
	// their ConfigMap.
	Close    int `json:"close"`
	Rollouts int `json:"rollouts"` // of the stream's Deployments
	// Latency is from each update sent to its Deployment's first rollout
	// after it, of the updates rolled before the next update of their
	// ConfigMap.
	Latency stats.Distribution `json:"latency"`
	// Doubled counts the rollouts beyond the first between an update and
	// the next of its ConfigMap; WithoutUpdate the rollouts with no update
	// of their ConfigMap since the Deployment's previous rollout; Missed
	// the updates no rollout followed within the rollout window plus
	// -change-timeout.
	Doubled       int `json:"doubled"`
	WithoutUpdate int `json:"without_update"`
	Missed        int `json:"missed"`
	// Hashed counts the rollouts with a trigger hash (Rollout.Hash: nudge's
	// for the population's Reloader annotations, none of the floor's), and
	// SameContent those of the same hash as the Deployment's rollout
	// before: the same content rolled twice. A doubled rollout of another
	// hash rolled content already stale when it was written.
	Hashed      int `json:"hashed"`
	SameContent int `json:"same_content"`
	// CPUPerUpdate and RequestsPerUpdate are the side's CPU milliseconds
	// and API requests from the stream's start until its Events went
	// quiet, per update.
	CPUPerUpdate      float64 `json:"cpu_ms_per_update"`
	RequestsPerUpdate float64 `json:"requests_per_update"`
}

// String says what the stream was.
func (r *Random) String() string {
	s := fmt.Sprintf("%.0f updates/s over %d ConfigMaps for %.0f s", r.Rate, r.Sources, r.Seconds)
	if r.RestartAtSeconds > 0 {
		s += fmt.Sprintf(", kill -9 and restart at %.0f s", r.RestartAtSeconds)
	}
	return s
}

// Totals returns the controller's doubled, without-update and missed of
// every run, and the floor's.
func (r *Random) Totals() (controller, floor [3]int) {
	for _, run := range r.Runs {
		for _, s := range []struct {
			side *RandomSide
			sum  *[3]int
		}{{&run.Controller, &controller}, {&run.Floor, &floor}} {
			s.sum[0] += s.side.Doubled
			s.sum[1] += s.side.WithoutUpdate
			s.sum[2] += s.side.Missed
		}
	}
	return controller, floor
}

// Population counts what populate created, and how long it took.
type Population struct {
	Namespaces  int     `json:"namespaces"`
	Secrets     int     `json:"secrets"`
	ConfigMaps  int     `json:"configmaps"`
	Deployments int     `json:"deployments"`
	Seconds     float64 `json:"seconds"`
}

// Bindings is the value-binding scenario: Secret changes, each bound
// into one Harbor, timed from sending the Secret's update to seeing the new
// value in the Harbor; then one Secret bound into FanOut Harbors.
type Bindings struct {
	Load         Load               `json:"load"`
	Bindings     int                `json:"bindings"`
	SetupSeconds *float64           `json:"setup_seconds,omitempty"` // from the first binding created until every target held its value
	Changes      int                `json:"changes"`
	Latency      stats.Distribution `json:"latency"`
	Misses       int                `json:"misses"`
	FanOut       Many               `json:"fanout"` // Workloads are the bound Harbors, Rolled those updated
	// SetupStatusSeconds and FanOutStatusSeconds: from the first binding
	// created, and from the fan-out's change, until every binding's status
	// recorded it (as the scenario's watch of ValueBindings saw it).
	SetupStatusSeconds  *float64 `json:"setup_status_seconds,omitempty"`
	FanOutStatusSeconds *float64 `json:"fanout_status_seconds,omitempty"`
}

// Churn is short-lived Deployments sharing one ConfigMap that
// changes meanwhile.
type Churn struct {
	Load        Load    `json:"load"`
	Seconds     float64 `json:"seconds"`
	Deployments int     `json:"deployments"` // created, every EveryMS, each deleted LifeMS later
	EveryMS     float64 `json:"every_ms"`
	LifeMS      float64 `json:"life_ms"`
	Changes     int     `json:"changes"` // of the shared ConfigMap, every ChangeMS
	ChangeMS    float64 `json:"change_ms"`
	// Expected counts the (Deployment, change) pairs where the Deployment
	// existed churnMargin before the change and churnMargin after it;
	// Seen those that rolled after the change and before the next one.
	Expected int `json:"expected"`
	Seen     int `json:"seen"`
	Missed   int `json:"missed"`
	// Doubled counts the rollouts of a Deployment beyond the changes made
	// while it existed.
	Doubled           int     `json:"doubled"`
	CPUPerUpdate      float64 `json:"cpu_ms_per_update"`
	RequestsPerUpdate float64 `json:"requests_per_update"`
}

// Large is sources near the API server's size limit (1 MiB of data),
// each used by one Deployment and changed Rounds times, one change after
// another, each awaited.
type Large struct {
	Load    Load `json:"load"`
	Sources int  `json:"sources"` // Secrets and ConfigMaps, half each
	Bytes   int  `json:"bytes"`   // of data in each source ...
	Keys    int  `json:"keys"`    // ... in this many keys; a change rewrites one
	Rounds  int  `json:"rounds"`  // changes of each source
	Changes int  `json:"changes"`
	// Latency is from each change sent to its Deployment's next pod-template
	// change; Missed and Doubled as in Steady.
	Latency           stats.Distribution `json:"latency"`
	Missed            int                `json:"missed"`
	Doubled           int                `json:"doubled"`
	CPUPerUpdate      float64            `json:"cpu_ms_per_update"`
	RequestsPerUpdate float64            `json:"requests_per_update"`
	// RSSBeforeMiB is the controller's RSS before the sources were
	// created, RSSAfterMiB once the last change rolled and the scenario
	// settled; PeakRSSMiB its peak RSS since its start (VmHWM) then.
	RSSBeforeMiB float64 `json:"rss_before_mib"`
	RSSAfterMiB  float64 `json:"rss_after_mib"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
}

// String says what the scenario was.
func (l *Large) String() string {
	return fmt.Sprintf("%d sources of %.0f KiB in %d keys, each changed %d times", l.Sources, float64(l.Bytes)/1024, l.Keys, l.Rounds)
}

// Kinds is one workload of each kind, each using a ConfigMap of its
// own that changes once.
type Kinds struct {
	Load              Load    `json:"load"`
	Kinds             []Kind  `json:"kinds"`
	CPUPerUpdate      float64 `json:"cpu_ms_per_update"`
	RequestsPerUpdate float64 `json:"requests_per_update"`
}

// Kind is one kind's workload: the rollouts (pod-template changes)
// seen from its source's change until the scenario's end, and the time to
// the first.
type Kind struct {
	Kind string `json:"kind"`
	// Expected is 1, but 0 for a Job: nudge leaves Jobs alone unless it
	// runs with --recreate-jobs (docs/reference.md), and a Job's pod
	// template cannot change.
	Expected  int      `json:"expected"`
	Rollouts  int      `json:"rollouts"`
	LatencyMS *float64 `json:"latency_ms,omitempty"`
}

// Met reports whether every kind rolled as often as expected.
func (k *Kinds) Met() bool {
	return !slices.ContainsFunc(k.Kinds, func(r Kind) bool { return r.Rollouts != r.Expected })
}

// Restart is one controller of -restart-cmd, started after the
// scenarios over the same cluster (its workloads already baselined) and
// left idle for -idle once its probe rolled: its memory then, and its
// peak since start.
type Restart struct {
	Name          string   `json:"name"`
	Cmd           string   `json:"cmd"`
	Load          Load     `json:"load"`
	SyncedSeconds *float64 `json:"synced_seconds"` // the probe rolled, from start
	RSSMiB        float64  `json:"rss_mib"`
	AnonRSSMiB    float64  `json:"anon_rss_mib"`
	PeakRSSMiB    float64  `json:"peak_rss_mib"`
	// With -cgroup: the working set (usage minus inactive file pages) at
	// the end of idle and its peak since start, and the active file
	// pages it counts.
	WorkingSetMiB     *float64 `json:"working_set_mib,omitempty"`
	PeakWorkingSetMiB *float64 `json:"peak_working_set_mib,omitempty"`
	ActiveFileMiB     *float64 `json:"active_file_mib,omitempty"`
	CPUSeconds        float64  `json:"cpu_seconds"` // from start to the end of idle
}

// WorkingSet is ", working set … (active file …), peak …" in MiB, or ""
// without -cgroup.
func (r Restart) WorkingSet() string {
	if r.WorkingSetMiB == nil {
		return ""
	}
	return fmt.Sprintf("; working set %.1f MiB (active file %.1f), peak %.1f", *r.WorkingSetMiB, *r.ActiveFileMiB, *r.PeakWorkingSetMiB)
}
