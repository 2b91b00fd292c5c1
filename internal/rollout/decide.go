package rollout

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"nudge.dev/nudge/internal/eviction"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// Action is what the reconciler does with a workload.
type Action int

// The actions Decide returns. "Nothing is written" below is of the
// applied state and the trigger: which writes the reconciler makes for
// each action (a hold's annotation, a pause's end) is the table "What
// each action writes" in docs/design.md.
const (
	// None: the applied state is the desired state.
	None Action = iota
	// Baseline: write the desired state without a trigger. Chosen on first
	// sight (no applied state, another key, unreadable), when only the set
	// of references changed, and when a settled source's content differs
	// from the applied (see Input.Settled); never for other content of one
	// already applied (nor of a young source, see Input.Young).
	Baseline
	// Roll: write the trigger and the desired state in one patch.
	Roll
	// Wait: a change is pending, part of a burst inside the rollout window
	// (see Input.Changes); reconcile again after RequeueAfter. Nothing is
	// written.
	Wait
	// Hold: a change is pending but a required source is missing, so new pods
	// could not start. Nothing is written; the change stays pending until the
	// source returns.
	Hold
	// Restored: the applied state is one nudge replaced before, written back
	// by someone else with its seal (see Input.Restored). Nothing is written.
	Restored
	// Pending: the workload would roll, but every rollout slot is taken
	// (--max-concurrent-rollouts, see Input.Waves). Nothing is written; the
	// workload rolls when a slot frees.
	Pending
	// Halted: the workload would roll, but a rollout of the same change
	// failed elsewhere (see Input.Halted). Nothing of the rollout is
	// written; the halt ends when the source changes again.
	Halted
	// Deferred: the workload would roll, but its maintenance window is
	// closed (see Input.Maintenance) and no changed source is urgent.
	// Nothing of the rollout is written; it rolls once the window opens
	// (RequeueAfter).
	Deferred
	// Braked: the workload would roll, but it had Input.Budget rollouts in
	// the last StormPeriod (the storm brake). Nothing of the rollout is
	// written; it rolls once, with the content as it is then, when the
	// budget frees (RequeueAfter).
	Braked
	// Gated: the workload would roll, but a changed Secret's producer is not
	// ready (see Input.Unready). Nothing of the rollout is written; it
	// rolls once every producer is ready, or at the latest after
	// RequeueAfter.
	Gated
	// Paused: the workload would roll (or wait for a burst to end), but a
	// pause holds it: nudge.dev/paused on the workload or its Namespace, or
	// on every changed source (see Input.Pauses). Nothing of the rollout is
	// written, so the change stays pending in the applied state, across
	// restarts of nudge too; it rolls once, with the content as it is then,
	// when the pause is lifted (the lift's own event reconciles it).
	Paused
	// Evict: no change is pending and a restart of the workload's pods
	// through the Eviction API is under way (see Input.Restart): the
	// reconciler carries out Decision.Restart, its plan (evict pods now,
	// wait for a replacement, record that it is done or halted).
	Evict
	// Contested: a first sight would replace the state of another
	// fingerprint key that replaced nudge's own within the contest window
	// (see Input.Contested). Nothing is written; the workload is looked at
	// again after RequeueAfter.
	Contested
)

var actionNames = [...]string{"None", "Baseline", "Roll", "Wait", "Hold", "Restored", "Pending", "Halted", "Deferred", "Braked", "Gated", "Paused", "Evict", "Contested"}

// String returns the action's name, "Action(N)" for a number that names
// none.
func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// Waits reports whether a leaves a change pending with nothing of it
// written: the workload rolls later, when what holds it ends (the window,
// a missing source, a slot, a halt, a maintenance window, the storm brake,
// a producer, a pause), or leaves the first sight to later (a contest).
// What is remembered of the change (memo.Births' young sources) must
// outlive such a decision.
func (a Action) Waits() bool {
	switch a {
	case Wait, Hold, Pending, Halted, Deferred, Braked, Gated, Paused, Contested:
		return true
	}
	return false
}

// Input is what Decide needs to know about one workload.
type Input struct {
	// Applied is the value of the workload's applied-fingerprint annotation,
	// "" when absent.
	Applied string
	// Sealed is true when Applied is the value nudge wrote last (its seal
	// label matches). An unsealed value was restored or copied by someone
	// else (`kubectl rollout undo` brings back a ReplicaSet's annotations)
	// and is not trusted: first sight.
	Sealed bool
	// Restored is true when Applied, sealed, is a state nudge itself replaced
	// earlier: someone wrote it back, as a GitOps tool does that keeps a
	// manifest exported from the live object. Acting on it would make nudge
	// and that tool take turns rolling the workload, so nothing is done. The
	// reconciler knows it from the workload's managedFields, which say who
	// wrote the applied state last (see ownership.WrittenBackBy).
	Restored bool
	// Namespace is the workload's namespace.
	Namespace string
	// Desired holds an entry for every referenced source that was found, and
	// Absent for every optional one that was not.
	Desired fingerprint.State
	// Missing lists the references to required sources that were not found.
	Missing []refs.Reference
	// Kept lists the references to sources that were not found but whose
	// absence is no change and holds nothing: sources an annotation names
	// that the pod spec does not read. Like Missing, each keeps its applied
	// entry, so its return with other content rolls.
	Kept []refs.Reference
	// Gone holds, of the Missing and Kept sources, those that existed when
	// the workload was created and were deleted since (for a minute after
	// the creation; see controller's births), each with the entry of the
	// content its pods started with. A first sight records it, as a
	// baseline made before the deletion would have kept it: the source's
	// return with other content then rolls, and with the same does not.
	Gone map[refs.Source]fingerprint.Entry
	// CreateRolls records a missing required or kept source as absent
	// instead of keeping its applied entry, so that its return rolls
	// whatever its content (Reloader's --reload-on-create).
	CreateRolls bool
	// Young lists the sources of which nudge saw what the workload reads
	// change after the workload was created, while it has not rolled it
	// since (for a minute after the creation; see memo.Births):
	// its pods were made with older content. Each that is in Desired is a
	// change, rolled on first sight, and when Applied holds it read the
	// same way (same shape) even with the same digest (a first sight that
	// read the new content recorded it as the old). One that enters the
	// references or is read another way is baselined, as any. Young counts
	// only while LastRollout is zero: a workload some nudge has rolled got
	// pods with the content of that rollout, and its applied state says so
	// (a namespace handed from one shard to another after its change was
	// rolled is not rolled again).
	Young []refs.Source
	// Settled lists the sources whose content, as Desired holds it, was
	// written at or before the workload's creation (for a minute after the
	// creation; see memo.Births): the workload's pods started with
	// it. An applied state with other content read the same way recorded
	// what a cache the write had not reached yet held on first sight, not
	// what the pods run with: it is baselined, not rolled. A young source
	// is not settled.
	Settled []refs.Source
	// LastRollout is when nudge last rolled the workload; zero if never.
	LastRollout time.Time
	// Now is the current time.
	Now time.Time
	// Window is the rollout window: a change that is part of a burst (see
	// Changes) waits, at the latest, until Window after the last rollout, so
	// a burst gives at most two rollouts and a never-ending stream of
	// changes one rollout per Window.
	Window time.Duration
	// Changes holds when nudge saw the content of the workload's sources
	// change (sources.Changes: at most the last two per source), in any
	// order; empty when nothing is remembered, as after a restart. The
	// pending change is lone, and rolls at once, unless its latest two are
	// less than Quiet(Window) apart: then it is part of a burst and rolls
	// once the sources have been quiet for Quiet(Window).
	Changes []time.Time

	// Waves is true when --max-concurrent-rollouts bounds the rollouts in
	// flight; Slot then says whether a slot is free for this workload now
	// (the reconciler takes it just before it writes the rollout).
	Waves, Slot bool
	// Halts are the halts that may hold the workload's rollout: the one its
	// nudge.dev/halted annotation records (Marked), or else the failed
	// rollouts elsewhere of its sources' current content (see fleet.Waves).
	Halts []Halt
	// Contested, when not zero, says that the applied state is another
	// fingerprint key's, written over the state this nudge took over from
	// it less than the contest window ago (see ownership.Takeovers): a
	// first sight that would replace it again is Contested, for this long.
	Contested time.Duration

	// Gates are what the gates a rollout passes beyond the window need
	// (see gate).
	Gates
	// Pauses say what is paused (nudge.dev/paused).
	Pauses

	// Evicts says that the workload's pods are restarted through the
	// Eviction API after a rollout (nudge.dev/rollout-strategy "evict",
	// or --evict-pods-of): a Roll starts a restart (Decision.Restarts).
	Evicts bool
	// Restart, when not nil, is a restart under way, not halted, with
	// its pods as the reconciler listed them: with no change pending, the
	// decision is Evict with its plan.
	Restart *eviction.Input
}

// Halt is a halt of a workload's rollouts for one content of one source:
// a rollout of that content failed elsewhere (rule 11).
type Halt struct {
	// Source is the source whose content is halted.
	Source refs.Source
	// Digest is the keyed digest of the content halted
	// (sources.ContentDigest's form), and Now that of Source's content
	// now: when they differ, the source changed again and the halt has
	// ended.
	Digest, Now string
	// After names the workload whose rollout failed: "Deployment shop/web".
	After string
	// Marked is true for the halt the workload carries (nudge.dev/halted;
	// a malformed one has Digest "" ): when it holds nothing, its removal is
	// decided (Decision.Unhalt).
	Marked bool
}

// holds reports whether h holds a change of the sources changed.
func (h Halt) holds(changed []refs.Source) bool {
	return h.Digest != "" && h.Digest == h.Now && slices.Contains(changed, h.Source)
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Write is the state to store for Baseline and Roll.
	Write fingerprint.State
	// Changed lists, sorted, the sources whose content changed (Roll, Wait,
	// Hold).
	Changed []refs.Source
	// FirstSight is true when no usable applied state was found: none, not
	// sealed, unreadable, or of another key. Its action is Baseline, or Roll
	// for a young source (Input.Young).
	FirstSight bool
	// RequeueAfter is when to look again, for Wait.
	RequeueAfter time.Duration
	// Unhalt is true when the workload carries a halt that has ended (its
	// source changed again): the reconciler removes it, with the rollout
	// when there is one.
	Unhalt bool
	// Halt is, for Halted, the halt that holds the change.
	Halt Halt
	// Recheck is true for a Roll the source's own event did not bring: it
	// trails a burst (its wait ended, see Input.Changes) or catches up a
	// change nudge did not see happen (none is remembered, as after a
	// restart). The cache it was decided on may then be behind the API
	// server by a newer change, whose event would roll the workload again
	// at once: two rollouts, the first of content already superseded. The
	// reconciler asks the API server for the changed sources' versions
	// before it writes (see controller's behind).
	Recheck bool
	// Rolled is, for a Roll with a storm brake (Input.Budget), the rollout
	// times to record: the last Budget, this one included.
	Rolled []time.Time
	// Restarts is true for a Roll of a workload that Evicts: the rollout
	// also starts a restart of its pods, from the rollout's time.
	Restarts bool
	// Restart is, for Evict, the restart's plan (eviction.PlanOf).
	Restart eviction.Plan
	// Resume, when not zero, is when at the latest to come back for the
	// restart of the workload's pods that a Roll starts (Restarts), or
	// that another action leaves for later (Input.Restart): nothing of
	// the workload's own brings it back (its pods are not watched, and
	// nudge's own writes' events are dropped).
	Resume time.Duration
	// Entered lists, sorted, the young sources (Input.Young) a Baseline
	// records because they enter the references or are read another way:
	// once written, the applied state holds their change as what the pods
	// run with, so they are young no more (see memo.Births).
	Entered []refs.Source
}

// Decide compares the applied and desired states of a workload.
//
// A source rolls the workload only when it is in both states, read the same
// way (same shape), with a different digest: a source that enters or leaves
// the references (an edited annotation, an ignore or match mark, a new key
// read by the pod spec) is re-baselined without a rollout, because either the
// workload's own change rolls it or nothing its pods read has changed. An
// optional source that appears or disappears changes its digest from or to
// fingerprint.Absent, so it rolls. A missing required or kept source keeps
// its applied entry, so its return with other content rolls and with the
// same content does not; only a missing required one holds other changes.
//
// A young source (Input.Young) in the desired state is a change on first
// sight (unless a required source is missing: the baseline is written)
// and, when the applied state holds it with the same shape, even with the
// same digest. A settled source (Input.Settled) is no change: its new
// digest is baselined.
//
// A first sight that would replace another key's state contested within
// the contest window is Contested (Input.Contested). A change that would
// roll, or wait for its burst to end, is Paused while a pause holds it
// (Input.Pauses): a pause is its owner's word, so it holds whatever else
// would have; it does not hold a missing source's Hold, which warns. Then
// a change that would roll is Halted while a halt holds the current
// content of one of the changed sources (Input.Halts); then
// Deferred outside its maintenance window, Braked past its storm budget,
// Gated while a producer is not ready (see gate); and Pending while waves
// are on and no slot is free. A halt whose source has changed
// again since has ended: Decision.Unhalt asks for its removal.
//
// A Roll of a workload that Evicts restarts its pods (Decision.Restarts):
// a change during a restart folds into it, from the new rollout's time.
// With nothing else to do (None), a restart under way (Input.Restart) is
// Evict, with its plan; any other action comes first, and the restart goes
// on after it (Decision.Resume).
func Decide(in Input) Decision {
	d := decideChange(in)
	switch {
	case d.Action == Roll && in.Evicts:
		d.Restarts, d.Resume = true, RestartResume
	case d.Action == None && in.Restart != nil:
		d = Decision{Action: Evict, Restart: eviction.PlanOf(*in.Restart)}
	case in.Restart != nil:
		d.Resume = RestartResume
	}
	return d
}

// RestartResume is how soon a reconcile comes back for a restart through
// the Eviction API that its decision started or left for later
// (Decision.Resume).
const RestartResume = time.Second

// decideChange is Decide without the restart.
func decideChange(in Input) Decision {
	d := decide(in)
	if d.Action == Baseline && d.FirstSight && in.Contested > 0 {
		return Decision{Action: Contested, RequeueAfter: in.Contested}
	}
	i := slices.IndexFunc(in.Halts, func(h Halt) bool { return h.holds(d.Changed) })
	marked := slices.ContainsFunc(in.Halts, func(h Halt) bool { return h.Marked })
	switch {
	case (d.Action == Roll || d.Action == Wait) && in.pauses(d.Changed):
		return Decision{Action: Paused, Changed: d.Changed, Unhalt: i < 0 && marked}
	case i >= 0 && (d.Action == Roll || d.Action == Wait):
		return Decision{Action: Halted, Changed: d.Changed, Halt: in.Halts[i]}
	case i < 0 && marked:
		d.Unhalt = true
	}
	if d.Action != Roll {
		return d
	}
	if d = gate(in, d); d.Action == Roll && in.Waves && !in.Slot {
		return Decision{Action: Pending, Changed: d.Changed, Unhalt: d.Unhalt}
	}
	return d
}

// Quiet returns how long a workload's sources must go without a change for
// a burst of changes to be over, for a rollout window w: min(1 s, w/5). One
// edit that writes several objects (kubectl apply, a Helm upgrade, a
// GitOps sync) writes them within a few hundred milliseconds; a second is
// above that and well below a steady stream's period per workload, and w/5
// keeps a short window's guard as short (a zero window never waits).
func Quiet(w time.Duration) time.Duration {
	return min(time.Second, w/5)
}

// rollsAt returns when a pending change may roll: the zero time (at once)
// when there was no rollout within the window or the change is lone;
// otherwise when the sources have been quiet for Quiet(Window), at the
// latest at the window's end. A time not after Now means at once.
func (in Input) rollsAt() time.Time {
	end := in.LastRollout.Add(in.Window)
	if in.LastRollout.IsZero() || !in.Now.Before(end) {
		return time.Time{}
	}
	last, burst := in.burst()
	if !burst {
		return time.Time{} // a lone change, or none remembered
	}
	if quiet := last.Add(Quiet(in.Window)); quiet.Before(end) {
		return quiet
	}
	return end
}

// burst returns the latest of in.Changes, and whether the one before it
// came less than Quiet(Window) earlier: the pending change is part of a
// burst.
func (in Input) burst() (last time.Time, burst bool) {
	var prev time.Time
	for _, t := range in.Changes {
		switch {
		case t.After(last):
			last, prev = t, last
		case t.After(prev):
			prev = t
		}
	}
	return last, !prev.IsZero() && last.Sub(prev) < Quiet(in.Window)
}

// decide is Decide without waves, halts and gates.
func decide(in Input) Decision {
	applied, err := fingerprint.Parse(in.Applied, in.Namespace)
	first := in.Applied == "" || !in.Sealed || err != nil || applied.KeyID != in.Desired.KeyID

	write := fingerprint.State{KeyID: in.Desired.KeyID, Entries: maps.Clone(in.Desired.Entries)}
	if write.Entries == nil {
		write.Entries = map[refs.Source]fingerprint.Entry{}
	}
	for _, ref := range slices.Concat(in.Missing, in.Kept) {
		if e, ok := applied.Entries[ref.Source]; ok && !first && !in.CreateRolls {
			write.Entries[ref.Source] = e
		} else if in.CreateRolls {
			write.Entries[ref.Source] = fingerprint.Entry{Shape: fingerprint.Shape(ref), Digest: fingerprint.Absent}
		} else if e, ok := in.Gone[ref.Source]; ok && first {
			write.Entries[ref.Source] = e
		}
	}
	var changed, entered []refs.Source
	for src, d := range in.Desired.Entries {
		a, ok := applied.Entries[src]
		same := ok && a.Shape == d.Shape
		young := in.LastRollout.IsZero() && slices.Contains(in.Young, src)
		settled := !young && slices.Contains(in.Settled, src)
		if young && !first && !same {
			entered = append(entered, src)
		}
		if (young && (first || same)) || (!first && same && a.Digest != d.Digest && !settled) {
			changed = append(changed, src)
		}
	}
	slices.SortFunc(changed, refs.Source.Compare)
	slices.SortFunc(entered, refs.Source.Compare)
	if first && (len(changed) == 0 || len(in.Missing) > 0) {
		return Decision{Action: Baseline, Write: write, FirstSight: true}
	}
	if in.Restored && !first {
		return Decision{Action: Restored}
	}

	switch {
	case len(changed) > 0 && len(in.Missing) > 0:
		return Decision{Action: Hold, Changed: changed}
	case len(changed) > 0 && in.rollsAt().After(in.Now):
		return Decision{Action: Wait, Changed: changed, RequeueAfter: in.rollsAt().Sub(in.Now)}
	case len(changed) > 0:
		_, burst := in.burst()
		recheck := !first && (burst || len(in.Changes) == 0)
		return Decision{Action: Roll, Write: write, Changed: changed, FirstSight: first, Recheck: recheck}
	case !write.Equal(applied):
		return Decision{Action: Baseline, Write: write, Entered: entered}
	default:
		return Decision{Action: None}
	}
}
