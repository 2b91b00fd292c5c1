// Package results holds what one run of the bench measured (Run, the JSON
// that -json writes), the targets it is held to (Targets) and its Markdown
// report, alone (Markdown) or beside other runs (Compare).
package results

import (
	"time"

	"nudge.dev/nudge/hack/bench/audit"
	"nudge.dev/nudge/hack/bench/plane"
	"nudge.dev/nudge/hack/bench/stats"
)

// Run is everything one run measured; it is the JSON output.
type Run struct {
	Controller    string     `json:"controller"`
	ControllerCmd string     `json:"controller_cmd"`
	Command       string     `json:"command"`            // the benchmark's own command line
	Binary        string     `json:"binary,omitempty"`   // the controller binary's path, size and SHA-256 prefix
	Revision      string     `json:"revision,omitempty"` // git describe of the working tree
	Started       time.Time  `json:"started"`
	Seconds       float64    `json:"seconds"`
	Machine       Machine    `json:"machine"`
	Scale         Scale      `json:"scale"`
	Population    Population `json:"population"`

	Sync     *Sync     `json:"sync,omitempty"`
	Idle     *Idle     `json:"idle,omitempty"`
	Latency  *Latency  `json:"latency,omitempty"`
	FanOut   *Many     `json:"fanout,omitempty"`
	Burst    *Many     `json:"burst,omitempty"`
	NoOp     *NoOp     `json:"noop,omitempty"`
	Coalesce *Coalesce `json:"coalesce,omitempty"`
	Downtime *Downtime `json:"downtime,omitempty"`
	Bindings *Bindings `json:"bindings,omitempty"`
	Versus   *Versus   `json:"versus,omitempty"`
	Steady   *Steady   `json:"steady,omitempty"`
	Churn    *Churn    `json:"churn,omitempty"`
	Restart  *Steady   `json:"restart,omitempty"` // the steady stream with a kill -9 and restart halfway
	Random   *Random   `json:"random,omitempty"`
	// RandomRestart is the random stream with a kill -9 and restart.
	RandomRestart *Random       `json:"random_restart,omitempty"`
	Large         *Large        `json:"large,omitempty"`
	Kinds         *Kinds        `json:"kinds,omitempty"`
	Process       *Process      `json:"process,omitempty"`
	Shards        *Shards       `json:"shards,omitempty"`
	Plane         *plane.Result `json:"plane,omitempty"`
	Restarts      []Restart     `json:"restarts,omitempty"`

	Phases  []Phase  `json:"phases"`
	Targets []Target `json:"targets"`
	Notes   []string `json:"notes,omitempty"`
}

// Scale is the size of the run.
type Scale struct {
	Namespaces  int  `json:"namespaces"`
	Secrets     int  `json:"secrets_per_namespace"`
	ConfigMaps  int  `json:"configmaps_per_namespace"`
	Deployments int  `json:"deployments"`
	FanOut      int  `json:"fanout_deployments"`
	SourceBytes int  `json:"source_bytes"`
	Keys        int  `json:"keys"`
	ScaleRun    bool `json:"scale_run"`
}

// Sync is the controller's start: seconds are from its start.
type Sync struct {
	Load                Load     `json:"load"`
	ReadySeconds        *float64 `json:"ready_seconds,omitempty"` // /readyz first answered 200
	ProbeRolledSeconds  *float64 `json:"probe_rolled_seconds"`    // a change of the probe ConfigMap rolled the probe Deployment
	BaselinesWritten    int      `json:"baselines_written"`       // workloads carrying the baseline annotation
	Workloads           int      `json:"workloads"`
	AllBaselinedSeconds *float64 `json:"all_baselined_seconds,omitempty"`
	SyncedSeconds       *float64 `json:"synced_seconds"`       // the later of the probe's rollout and the last baseline
	FirstStartRollouts  int      `json:"first_start_rollouts"` // rollouts of any workload (but the probe) from start to the end of idle
}

// Idle is the controller once synced and left alone for Seconds.
type Idle struct {
	Load       Load    `json:"load"`
	Seconds    float64 `json:"seconds"`
	RSSMiB     float64 `json:"rss_mib"`
	AnonRSSMiB float64 `json:"anon_rss_mib"` // RssAnon: the part of RSS that is not the mapped binary
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// The controller's memory cgroup (-cgroup): its working set as the
	// kubelet computes it (usage minus inactive file pages), at the end
	// of idle and the largest sampled since start, and the file pages it
	// counts (active_file).
	WorkingSetMiB     *float64 `json:"working_set_mib,omitempty"`
	PeakWorkingSetMiB *float64 `json:"peak_working_set_mib,omitempty"`
	ActiveFileMiB     *float64 `json:"active_file_mib,omitempty"`
	CPUSeconds        float64  `json:"cpu_seconds"`      // since start
	IdleCPUSeconds    float64  `json:"idle_cpu_seconds"` // during the idle time
	Threads           int      `json:"threads"`
}

// Latency is sequential single changes, each to a source used by one
// Deployment: from sending the patch to seeing the pod template change.
type Latency struct {
	Load          Load                          `json:"load"`
	Changes       int                           `json:"changes"`
	Latency       stats.Distribution            `json:"latency"`
	Misses        int                           `json:"misses"`
	OtherRollouts int                           `json:"other_rollouts"` // of any workload but the changed one, or a second of it
	PatchRTT      stats.Distribution            `json:"patch_rtt"`      // the API server's answer to the benchmark's patch
	ByWay         map[string]stats.Distribution `json:"by_way"`
}

// Many is one or more changes that must roll many Deployments: seconds
// are from the first change sent.
type Many struct {
	Load          Load     `json:"load"`
	Changes       int      `json:"changes"`
	Workloads     int      `json:"workloads"`
	Rolled        int      `json:"rolled"`
	Misses        int      `json:"misses"`
	OtherRollouts int      `json:"other_rollouts"`
	SentSeconds   float64  `json:"sent_seconds"` // until every change was answered
	FirstSeconds  *float64 `json:"first_seconds,omitempty"`
	P50Seconds    *float64 `json:"p50_seconds,omitempty"`
	AllSeconds    *float64 `json:"all_seconds,omitempty"` // until every workload rolled; nil on a miss
	LastSeconds   *float64 `json:"last_seconds,omitempty"`
}

// NoOp is label-only changes, which must roll nothing.
type NoOp struct {
	Load     Load `json:"load"`
	Changes  int  `json:"changes"`
	Rollouts int  `json:"rollouts"`
}

// Coalesce is changes to one ConfigMap GapMS apart.
type Coalesce struct {
	Load     Load    `json:"load"`
	Changes  int     `json:"changes"`
	GapMS    float64 `json:"gap_ms"`
	Rollouts int     `json:"rollouts"`
	// RolloutSeconds are the rollouts' times after the first change.
	RolloutSeconds []float64 `json:"rollout_seconds"`
	OtherRollouts  int       `json:"other_rollouts"`
}

// Downtime is changes made while the controller was stopped; seconds
// are from its restart.
type Downtime struct {
	Load          Load     `json:"load"`
	Changes       int      `json:"changes"`
	Workloads     int      `json:"workloads"` // that use the changed sources
	Caught        int      `json:"caught"`    // workloads that rolled after the restart
	ReadySeconds  *float64 `json:"ready_seconds,omitempty"`
	AllSeconds    *float64 `json:"all_seconds,omitempty"` // until every change rolled; nil on a miss
	LastSeconds   *float64 `json:"last_seconds,omitempty"`
	OtherRollouts int      `json:"other_rollouts"`
}

// Process is the first controller process when it was last measured:
// at the end of the scenarios, or just before the downtime scenario stopped
// it.
type Process struct {
	RSSMiB     float64 `json:"rss_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Threads    int     `json:"threads"`
}

// Phase is one stretch of the run, with the controller's requests in it
// (from the audit log) and the rollouts the benchmark saw.
type Phase struct {
	Name       string       `json:"name"`
	From       time.Time    `json:"from"`
	To         time.Time    `json:"to"`
	Load       Load         `json:"load"`
	CPUSeconds float64      `json:"cpu_seconds"` // the controller's, during the phase
	Rollouts   int          `json:"rollouts"`
	Requests   audit.Counts `json:"requests"`
	// WritesPerRollout and EventsPerRollout are the workload writes
	// (patch, update of workloadResources) and Event writes (create,
	// patch) per rollout; 0 without rollouts.
	WritesPerRollout float64 `json:"writes_per_rollout"`
	EventsPerRollout float64 `json:"events_per_rollout"`
	// TerminatedWatchers are the watches kube-apiserver closed because their
	// client (any client) fell behind, by resource; BenchWatchRestarts the
	// benchmark's own Deployment watches started in the phase (a restart
	// delays what it sees).
	TerminatedWatchers audit.Counts `json:"terminated_watchers,omitempty"`
	BenchWatchRestarts int          `json:"bench_watch_restarts"`
}

// Target is one of the targets and whether the run met it.
type Target struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    *bool  `json:"met"` // nil when the run did not measure it
}
