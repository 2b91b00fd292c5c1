package explain

import "time"

// Workload is the explanation of one workload.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Install is the install whose settings the explanation follows.
	Install Install `json:"install"`
	// TemplateFrom names the workload whose pod template the workload runs
	// and nudge reads its references from, "Deployment shop/web-pods" for
	// an Argo Rollout with a spec.workloadRef; empty for one that holds its
	// own.
	TemplateFrom string `json:"templateFrom,omitempty"`
	// Annotations are the dialect annotations the workload carries, on its
	// metadata and its pod template.
	Annotations []Annotation `json:"annotations"`
	// Malformed lists the annotation errors nudge reports as
	// MalformedAnnotation Warnings.
	Malformed []string `json:"malformed,omitempty"`
	// References lists every reference its dialects select, sorted by kind,
	// namespace and name.
	References []Reference `json:"references"`
	// Comparison says whether content could be compared.
	Comparison Comparison `json:"comparison"`
	// Status is what nudge does with the workload now.
	Status Status `json:"status"`
	// LastRollout is when nudge last rolled it (nudge.dev/last-rollout).
	LastRollout *time.Time `json:"lastRollout,omitempty"`
	// Rotation says which of its pods still run content from before a
	// source's current version (the sources it reads as env vars or through
	// subPath mounts); nil when it reads none so.
	Rotation *Rotation `json:"rotation,omitempty"`
	// Events are nudge's recent Events on it, oldest first.
	Events []Event `json:"events"`
}

// Annotation is one dialect annotation found on a workload.
type Annotation struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Dialect is "nudge", "reloader", "pod-reloader" or "wave".
	Dialect string `json:"dialect"`
	// Place is "metadata" or "template" (the pod template's annotations).
	Place string `json:"place"`
	// Selects says in words what the annotation selects.
	Selects string `json:"selects"`
}

// Reference is one selected reference and how its content compares.
type Reference struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Keys are the keys read; empty when the whole object is.
	Keys     []string `json:"keys,omitempty"`
	Optional bool     `json:"optional"`
	// ReadAs lists how it is read: env, envFrom, volume, projected, csi (the pod
	// spec), named (an annotation names it; "named:<dialect>"), search
	// (counts only with reloader.stakater.com/match), selector (a label
	// selector's set).
	ReadAs []string `json:"readAs"`
	// Outcome is resolve.Outcome: Counted, AbsentOptional, Missing, Kept,
	// Ignored, Unmatched, Unselected, Refused (another namespace's, with
	// --cross-namespace-references=deny), Unwatched, KindIgnored, and for a
	// SecretProviderClass CSIOff (explain does not read pod statuses).
	Outcome string `json:"outcome"`
	// Content compares the source with what the running pods started with:
	// Unchanged, Changed, New (not in the applied state), ReadDifferently
	// (other keys read), Missing, NotCounted, or Unknown (no applied state,
	// or no key to compare with).
	Content string `json:"content"`
	// Matched are, for a label selector's set (kind ConfigMapSelector or
	// SecretSelector, its name the selector, read as "selector"), the
	// names of the sources in it now, sorted; its Content compares the
	// whole set.
	Matched []string `json:"matched,omitempty"`
}

// The values of Reference.Content.
const (
	ContentUnchanged       = "Unchanged"
	ContentChanged         = "Changed"
	ContentNew             = "New"
	ContentReadDifferently = "ReadDifferently"
	ContentMissing         = "Missing"
	ContentNotCounted      = "NotCounted"
	ContentUnknown         = "Unknown"
)

// Comparison says whether content was compared, with which key.
type Comparison struct {
	// Compared is false when nudge's key Secret could not be read.
	Compared bool `json:"compared"`
	// KeyID is the key's public identifier (fingerprint.Key.ID).
	KeyID string `json:"keyID,omitempty"`
	// KeySecret is the key Secret, "namespace/name".
	KeySecret string `json:"keySecret"`
	// Reason says why content was not compared.
	Reason string `json:"reason,omitempty"`
}

// Status is what nudge does with a workload now.
type Status struct {
	// State is one of the State* constants.
	State string `json:"state"`
	// Message says why, in words.
	Message string `json:"message"`
	// Changed lists the sources whose content changed, "Kind ns/name".
	Changed []string `json:"changed,omitempty"`
	// Until is when a wait ends (StateWaiting).
	Until *time.Time `json:"until,omitempty"`
	// Rollout says where the last rollout nudge started with
	// --max-concurrent-rollouts stands, when it is not complete: in flight
	// (taking a slot), or failed (halting the rest of its change).
	Rollout string `json:"rollout,omitempty"`
	// WrittenBackBy is the field manager that wrote the applied state back
	// (StateRestored), as the workload's managedFields record it.
	WrittenBackBy string `json:"writtenBackBy,omitempty"`
	// Paused lists what pauses the workload's rollouts (nudge.dev/paused
	// "true"), whatever its state: "Deployment shop/web" (the workload
	// itself), "Namespace shop", or a source it reads, "ConfigMap
	// shop/app" (only that source's changes are held).
	Paused []string `json:"paused,omitempty"`
}

// The values of Status.State.
const (
	// StateNotManaged: no dialect annotation selects anything.
	StateNotManaged = "NotManaged"
	// StateFirstSight: no applied state, or one nudge did not write last
	// (no seal) or wrote with another key: nudge records a baseline and
	// does not roll.
	StateFirstSight = "FirstSight"
	// StateUpToDate: every source is what the pods started with.
	StateUpToDate = "UpToDate"
	// StateWouldRoll: a source changed; nudge rolls the workload.
	StateWouldRoll = "WouldRoll"
	// StateWaiting: a source changed in a burst of changes within the
	// rollout window after the last rollout; nudge rolls once the sources
	// are quiet, at the window's end at the latest. Only a Resolver given
	// the times of the changes (rollout.Input.Changes) can tell.
	StateWaiting = "Waiting"
	// StateHeld: a source changed but a required source is missing, so new
	// pods could not start; nudge waits for it.
	StateHeld = "Held"
	// StateRebaseline: only the set of references changed; nudge records
	// it without a rollout.
	StateRebaseline = "Rebaseline"
	// StatePending: a source changed and, with --max-concurrent-rollouts,
	// the workload waits for a rollout slot.
	StatePending = "Pending"
	// StateHalted: a source changed, but a rollout of the same content
	// failed on another workload: nudge.dev/halted halts this one until the
	// source changes again or the annotation is removed.
	StateHalted = "Halted"
	// StateRestored: another field manager wrote back a state nudge had
	// replaced (a manifest exported from the live object, applied again):
	// nudge does not roll the workload, whatever changes, while that
	// manager keeps nudge's keys in its manifest; its StateRestored Warning
	// says the same (see ownership.WrittenBackBy).
	StateRestored = "Restored"
	// StateDeferred: a source changed outside the workload's maintenance
	// window; nudge rolls it once the window opens (Until).
	StateDeferred = "Deferred"
	// StateBraked: a source changed, but the workload had its budget of
	// rollouts in the last hour (the storm brake); nudge rolls it once,
	// with the content as it is then, when the budget frees (Until).
	StateBraked = "Braked"
	// StateGated: a changed Secret's producer is not ready; nudge rolls
	// once it is, or at the latest at Until.
	StateGated = "Gated"
	// StatePaused: a source changed, but nudge.dev/paused holds the
	// rollout (Status.Paused says where it is set): nudge rolls it once,
	// with the content as it is then, when the pause is lifted.
	StatePaused = "Paused"
	// StateUnknown: content could not be compared (see Comparison).
	StateUnknown = "Unknown"
)

// Event is one of nudge's Events on an object.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
}

// Source is the explanation of one ConfigMap or Secret: the workloads of its
// namespace that use it or name it.
type Source struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Install is the install whose settings the explanation follows.
	Install Install `json:"install"`
	// Exists is false when the source does not exist (yet).
	Exists bool `json:"exists"`
	// Workloads lists, sorted by kind and name, every workload of the
	// namespace whose pod spec reads the source or whose annotations name or
	// exclude it.
	Workloads []Dependent `json:"workloads"`
}

// Dependent is one workload's relation to a source.
type Dependent struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// WouldRoll: a change of the source's content rolls the workload.
	WouldRoll bool `json:"wouldRoll"`
	// ReadAs is as in Reference; empty when the workload does not read it.
	ReadAs []string `json:"readAs,omitempty"`
	// Keys are the keys read; empty when the whole object is.
	Keys []string `json:"keys,omitempty"`
	// Why says in words why it does or does not roll.
	Why string `json:"why"`
}

// Install is the nudge install whose settings an explanation follows: the
// settings ConfigMap it published (settings.Find), or why none was found.
type Install struct {
	// ConfigMap is "namespace/name" of the settings found; "" when none.
	ConfigMap string `json:"configMap,omitempty"`
	// Version is the version of the nudge that published them.
	Version string `json:"version,omitempty"`
	// Flags are the install's flags that differ from the defaults, then
	// those given on the command line, which win.
	Flags []string `json:"flags,omitempty"`
	// Reason says why no settings were found: the explanation then follows
	// nudge's defaults and the flags given.
	Reason string `json:"reason,omitempty"`
}
