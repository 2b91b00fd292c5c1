package main

import "time"

// Results is everything one run measured; it is the JSON output.
type Results struct {
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

	Sync     *SyncResult     `json:"sync,omitempty"`
	Idle     *IdleResult     `json:"idle,omitempty"`
	Latency  *LatencyResult  `json:"latency,omitempty"`
	FanOut   *ManyResult     `json:"fanout,omitempty"`
	Burst    *ManyResult     `json:"burst,omitempty"`
	NoOp     *NoOpResult     `json:"noop,omitempty"`
	Coalesce *CoalesceResult `json:"coalesce,omitempty"`
	Downtime *DowntimeResult `json:"downtime,omitempty"`
	Bindings *BindingsResult `json:"bindings,omitempty"`
	Versus   *VersusResult   `json:"versus,omitempty"`
	Steady   *SteadyResult   `json:"steady,omitempty"`
	Churn    *ChurnResult    `json:"churn,omitempty"`
	Restart  *SteadyResult   `json:"restart,omitempty"` // the steady stream with a kill -9 and restart halfway
	Random   *RandomResult   `json:"random,omitempty"`
	// RandomRestart is the random stream with a kill -9 and restart.
	RandomRestart *RandomResult   `json:"random_restart,omitempty"`
	Large         *LargeResult    `json:"large,omitempty"`
	Kinds         *KindsResult    `json:"kinds,omitempty"`
	Process       *ProcessResult  `json:"process,omitempty"`
	Shards        *ShardsResult   `json:"shards,omitempty"`
	Plane         *PlaneResult    `json:"plane,omitempty"`
	Restarts      []RestartResult `json:"restarts,omitempty"`

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

// SyncResult is the controller's start: seconds are from its start.
type SyncResult struct {
	Load                Load     `json:"load"`
	ReadySeconds        *float64 `json:"ready_seconds,omitempty"` // /readyz first answered 200
	ProbeRolledSeconds  *float64 `json:"probe_rolled_seconds"`    // a change of the probe ConfigMap rolled the probe Deployment
	BaselinesWritten    int      `json:"baselines_written"`       // workloads carrying the baseline annotation
	Workloads           int      `json:"workloads"`
	AllBaselinedSeconds *float64 `json:"all_baselined_seconds,omitempty"`
	SyncedSeconds       *float64 `json:"synced_seconds"`       // the later of the probe's rollout and the last baseline
	FirstStartRollouts  int      `json:"first_start_rollouts"` // rollouts of any workload (but the probe) from start to the end of idle
}

// IdleResult is the controller once synced and left alone for Seconds.
type IdleResult struct {
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

// LatencyResult is sequential single changes, each to a source used by one
// Deployment: from sending the patch to seeing the pod template change.
type LatencyResult struct {
	Load          Load                    `json:"load"`
	Changes       int                     `json:"changes"`
	Latency       Distribution            `json:"latency"`
	Misses        int                     `json:"misses"`
	OtherRollouts int                     `json:"other_rollouts"` // of any workload but the changed one, or a second of it
	PatchRTT      Distribution            `json:"patch_rtt"`      // the API server's answer to the benchmark's patch
	ByWay         map[string]Distribution `json:"by_way"`
}

// ManyResult is one or more changes that must roll many Deployments: seconds
// are from the first change sent.
type ManyResult struct {
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

// NoOpResult is label-only changes, which must roll nothing.
type NoOpResult struct {
	Load     Load `json:"load"`
	Changes  int  `json:"changes"`
	Rollouts int  `json:"rollouts"`
}

// CoalesceResult is changes to one ConfigMap GapMS apart.
type CoalesceResult struct {
	Load     Load    `json:"load"`
	Changes  int     `json:"changes"`
	GapMS    float64 `json:"gap_ms"`
	Rollouts int     `json:"rollouts"`
	// RolloutSeconds are the rollouts' times after the first change.
	RolloutSeconds []float64 `json:"rollout_seconds"`
	OtherRollouts  int       `json:"other_rollouts"`
}

// DowntimeResult is changes made while the controller was stopped; seconds
// are from its restart.
type DowntimeResult struct {
	Load          Load     `json:"load"`
	Changes       int      `json:"changes"`
	Workloads     int      `json:"workloads"` // that use the changed sources
	Caught        int      `json:"caught"`    // workloads that rolled after the restart
	ReadySeconds  *float64 `json:"ready_seconds,omitempty"`
	AllSeconds    *float64 `json:"all_seconds,omitempty"` // until every change rolled; nil on a miss
	LastSeconds   *float64 `json:"last_seconds,omitempty"`
	OtherRollouts int      `json:"other_rollouts"`
}

// ProcessResult is the first controller process when it was last measured:
// at the end of the scenarios, or just before the downtime scenario stopped
// it.
type ProcessResult struct {
	RSSMiB     float64 `json:"rss_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Threads    int     `json:"threads"`
}

// Phase is one stretch of the run, with the controller's requests in it
// (from the audit log) and the rollouts the benchmark saw.
type Phase struct {
	Name       string    `json:"name"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	Load       Load      `json:"load"`
	CPUSeconds float64   `json:"cpu_seconds"` // the controller's, during the phase
	Rollouts   int       `json:"rollouts"`
	Requests   Counts    `json:"requests"`
	// WritesPerRollout and EventsPerRollout are the workload writes
	// (patch, update of workloadResources) and Event writes (create,
	// patch) per rollout; 0 without rollouts.
	WritesPerRollout float64 `json:"writes_per_rollout"`
	EventsPerRollout float64 `json:"events_per_rollout"`
	// TerminatedWatchers are the watches kube-apiserver closed because their
	// client (any client) fell behind, by resource; BenchWatchRestarts the
	// benchmark's own Deployment watches started in the phase (a restart
	// delays what it sees).
	TerminatedWatchers Counts `json:"terminated_watchers,omitempty"`
	BenchWatchRestarts int    `json:"bench_watch_restarts"`
}

// Target is one of the targets and whether the run met it.
type Target struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    *bool  `json:"met"` // nil when the run did not measure it
}
