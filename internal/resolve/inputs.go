package resolve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/maintenance"
	"nudge.dev/nudge/internal/memo"
	"nudge.dev/nudge/internal/ownership"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// Outcome is what became of one selected reference once its source was read.
type Outcome string

// The outcomes of a reference, in Resolved.
const (
	// Counted: the source exists and its content counts.
	Counted Outcome = "Counted"
	// AbsentOptional: an optional source (or any, with --reload-on-delete)
	// does not exist; its absence counts (fingerprint.Absent).
	AbsentOptional Outcome = "AbsentOptional"
	// Missing: a required source does not exist; a change holds until it
	// does (rollout.Input.Missing).
	Missing Outcome = "Missing"
	// Kept: a source only an annotation names does not exist; its absence
	// rolls nothing (rollout.Input.Kept).
	Kept Outcome = "Kept"
	// Refused: the source is in another namespace than the workload's, and
	// nudge denies such references (--cross-namespace-references=deny). It
	// is never read: nothing of it (existence, content, producer) reaches
	// the workload.
	Refused Outcome = "Refused"
	// Unwatched: the source is in a namespace nudge does not watch.
	Unwatched Outcome = "Unwatched"
	// KindIgnored: its kind is in --resources-to-ignore.
	KindIgnored Outcome = "KindIgnored"
	// Ignored: the source carries nudge.dev/ignore or
	// reloader.stakater.com/ignore.
	Ignored Outcome = "Ignored"
	// Unmatched: only Reloader's search mode selects it, and it does not
	// carry reloader.stakater.com/match (or does not exist).
	Unmatched Outcome = "Unmatched"
	// Unselected: the source does not match --resource-label-selector.
	Unselected Outcome = "Unselected"
	// CSIOff: a SecretProviderClass, while nudge does not watch the Secrets
	// Store CSI driver's SecretProviderClassPodStatuses
	// (--enable-csi-integration off, or the API does not serve them).
	CSIOff Outcome = "CSIOff"
	// Unmounted: a SecretProviderClass no pod of its namespace has mounted
	// (no mounted SecretProviderClassPodStatus): nothing runs with it, so it
	// counts for nothing.
	Unmounted Outcome = "Unmounted"
)

// Resolved is one reference a workload's dialects select, with what became of
// it when its source was read.
type Resolved struct {
	refs.Reference
	// NeedsMatch: only Reloader's search mode selects the source.
	NeedsMatch bool
	// NamedOnly: an annotation names the source and the pod spec does not
	// read it.
	NamedOnly bool
	// AbsenceCounts: the applied state records the source's absence
	// (fingerprint.Absent), so that its creation is a change: an optional
	// reference the pod spec reads, or any with --reload-on-create or
	// --reload-on-delete; never one only Reloader's search mode selects.
	AbsenceCounts bool
	Outcome       Outcome
	// Version is the source's resourceVersion as read, for Counted; "" for
	// the other outcomes.
	Version string
	// Producer is what Resolver.Producers says of a counted Secret's
	// producer; the zero Status (not Known) otherwise.
	Producer producer.Status
	// Matched are, for a label selector's set (refs.ConfigMapSelector,
	// refs.SecretSelector) Counted, the names of its members, sorted.
	Matched []string
	// PauseError, for Counted, is the source's nudge.dev/paused when it is
	// malformed (see dialect.Paused): the source is not paused.
	PauseError error
}

// Unready returns the sources of resolved whose producer is known and not
// ready (see Resolved.Producer).
func Unready(resolved []Resolved) []refs.Source {
	var out []refs.Source
	for _, c := range resolved {
		if c.Producer.Known && !c.Producer.Ready {
			out = append(out, c.Source)
		}
	}
	return out
}

// Only returns the entries of resolved whose source is in srcs.
func Only(resolved []Resolved, srcs []refs.Source) []Resolved {
	var out []Resolved
	for _, c := range resolved {
		if slices.Contains(srcs, c.Source) {
			out = append(out, c)
		}
	}
	return out
}

// Producers tells what is known of a Secret's producer (see
// producer.Gate.Of).
type Producers interface {
	Of(ctx context.Context, secret metav1.Object) (producer.Status, error)
}

// Counting is what Reloader's flags and nudge's options change in which
// sources count and how. The zero value is nudge's default.
type Counting struct {
	// ReloadOnCreate and ReloadOnDelete are Reloader's flags of those names:
	// a source created counts as a change (rollout.Input.CreateRolls), and
	// any source deleted counts as absent, as an optional one does.
	ReloadOnCreate, ReloadOnDelete bool
	// SourceSelector, when not nil, is the --resource-label-selector: other
	// sources never count.
	SourceSelector labels.Selector
	// IgnoreSources are source kinds never counted (--resources-to-ignore).
	IgnoreSources map[refs.Kind]bool
}

// Pace is what the flags say of when a workload may roll, and how far the
// annotations of workloads and Namespaces may change it.
type Pace struct {
	// Budget is --max-rollouts-per-hour, the storm brake
	// (rollout.Input.Budget); the annotation
	// nudge.dev/max-rollouts-per-hour may lower it (see Resolver.Limits).
	Budget int
	// Maintenance is --maintenance-window, the zero Window for none; a
	// Namespace's nudge.dev/maintenance-window and the workload's narrow
	// it (see Resolver.Maintenance).
	Maintenance maintenance.Window
	// Overrides is --allow-workload-overrides: the annotations may loosen
	// the flags' limits too (a shorter window, a larger or no budget), and
	// a workload's maintenance window replaces its Namespace's, which
	// replaces the flag's, instead of narrowing them.
	Overrides bool
	// NamespaceMarks says whether Namespaces' annotations are read (their
	// maintenance window and pause): only a cluster-wide nudge may read
	// Namespaces (with --namespaces it makes no cluster-scoped request).
	NamespaceMarks bool
}

// ErrMalformedWindow is returned by Resolver.Maintenance when a Namespace's
// nudge.dev/maintenance-window cannot be read.
var ErrMalformedWindow = errors.New("malformed maintenance window")

// ErrMalformedPause is returned by Resolver.Pause when a Namespace's
// nudge.dev/paused is neither "true" nor "false".
var ErrMalformedPause = errors.New("malformed pause")

// Resolver gathers rollout.Decide's inputs for one workload: nudge's
// reference resolution and fingerprint, over the cache in the reconciler and
// over the API in nudge explain. Sources its Reader returns must be digested
// (see trim.Sources).
type Resolver struct {
	Selector
	// Key is the installation's fingerprint key.
	Key fingerprint.Key
	// Window is the default rollout window (see rollout.Input.Window).
	Window time.Duration
	// Changes, when not nil, tells when the sources' content changed
	// (rollout.Input.Changes).
	Changes *sources.Changes
	// Counting is what Reloader's flags change in how sources count.
	Counting
	// Pace is what the flags say of when a workload may roll.
	Pace
	// Dialect reads the sources' ignore and match marks, with Reloader's
	// names as its flags set them; the zero Parser reads the defaults.
	Dialect dialect.Parser
	// Producers, when not nil, is asked of every counted Secret's producer
	// (Resolved.Producer): the producer-ready gate.
	Producers Producers
}

// Inputs returns rollout.Decide's input for workload obj, whose dialect spec
// and pod template are given, at time now, with every selected reference and
// its outcome in the order of refs.Merge. Input.Restored is read from obj's
// managedFields (see ownership.WrittenBackBy). It returns an error when a source or a
// list of sources cannot be read.
func (r Resolver) Inputs(ctx context.Context, obj client.Object, spec dialect.Spec, tmpl *corev1.PodTemplateSpec, now time.Time) (rollout.Input, []Resolved, error) {
	window, budget, _ := r.Limits(spec)
	applied := obj.GetAnnotations()[workload.AppliedAnnotation]
	seal, _ := workload.Seal(obj)
	sealed := applied != "" && seal == r.Key.Seal(applied)
	in := rollout.Input{
		Applied:     applied,
		Sealed:      sealed,
		Restored:    sealed && ownership.WrittenBackBy(obj.GetManagedFields()) != "",
		Namespace:   obj.GetNamespace(),
		Desired:     fingerprint.State{KeyID: r.Key.ID(), Entries: map[refs.Source]fingerprint.Entry{}},
		Now:         now,
		Window:      window,
		CreateRolls: r.ReloadOnCreate,
	}
	if t, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[workload.LastRolloutAnnotation]); err == nil {
		in.LastRollout = t
	}
	in.Budget = budget
	if in.Budget > 0 {
		in.Rolled = workload.ParseRollouts(obj.GetAnnotations()[workload.RolloutsAnnotation])
	}
	candidates, err := r.references(ctx, obj.GetNamespace(), spec, &tmpl.Spec)
	if err != nil {
		return in, nil, err
	}
	out := make([]Resolved, 0, len(candidates))
	rd := reads{versions: map[refs.Source]string{}, producers: map[refs.Source]producer.Status{}, pauses: map[refs.Source]error{}}
	for _, c := range candidates {
		if c.selected != nil {
			res, err := r.resolveSet(ctx, c, &in)
			if err != nil {
				return in, nil, err
			}
			out = append(out, res)
			continue
		}
		outcome, err := r.resolve(ctx, c, &in, rd)
		if err != nil {
			return in, nil, err
		}
		res := Resolved{Reference: c.Reference, NeedsMatch: c.needsMatch, NamedOnly: c.namedOnly, Outcome: outcome,
			AbsenceCounts: !c.needsMatch && (r.ReloadOnCreate || r.ReloadOnDelete || c.Optional && !c.namedOnly)}
		if outcome == Counted {
			res.Version, res.Producer, res.PauseError = rd.versions[c.Source], rd.producers[c.Source], rd.pauses[c.Source]
		}
		out = append(out, res)
	}
	for src, version := range rd.versions {
		in.Changes = append(in.Changes, r.Changes.Times(src, version, now)...)
	}
	// One change of a source that is both read by name and a member of a
	// set is told once: two equal times would make a burst of it.
	slices.SortFunc(in.Changes, time.Time.Compare)
	in.Changes = slices.CompactFunc(in.Changes, time.Time.Equal)
	return in, out, nil
}

// reads is what resolve records of the sources that count, by source:
// their resourceVersion, what r.Producers says of a Secret's producer, and
// a malformed nudge.dev/paused.
type reads struct {
	versions  map[refs.Source]string
	producers map[refs.Source]producer.Status
	pauses    map[refs.Source]error
}

// resolve reads the source of c and records it in in, and in rd when it
// counts: its marks (urgent, paused) in in too.
func (r Resolver) resolve(ctx context.Context, c candidate, in *rollout.Input, rd reads) (Outcome, error) {
	if c.refused {
		return Refused, nil
	}
	if !r.watched(ctx, c.Namespace) {
		return Unwatched, nil
	}
	if r.IgnoreSources[c.Kind] {
		return KindIgnored, nil
	}
	if c.Kind == refs.SecretProviderClass {
		return r.resolveClass(ctx, c, in)
	}
	src, err := r.Get(ctx, c.Source)
	switch {
	case apierrors.IsNotFound(err) && c.namedOnly && !r.ReloadOnDelete:
		in.Kept = append(in.Kept, c.Reference)
		return Kept, nil
	case apierrors.IsNotFound(err):
		if c.Optional || r.ReloadOnDelete {
			if c.needsMatch {
				return Unmatched, nil
			}
			in.Desired.Entries[c.Source] = fingerprint.Entry{Shape: fingerprint.Shape(c.Reference), Digest: fingerprint.Absent}
			return AbsentOptional, nil
		}
		in.Missing = append(in.Missing, c.Reference)
		return Missing, nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", c.Source, err)
	}
	switch {
	case r.Dialect.Ignored(src.GetAnnotations()):
		return Ignored, nil
	case c.needsMatch && !r.Dialect.Matched(src.GetAnnotations()):
		return Unmatched, nil
	case r.SourceSelector != nil && !r.SourceSelector.Matches(labels.Set(src.GetLabels())):
		return Unselected, nil
	}
	in.Desired.Entries[c.Source] = r.Key.Entry(c.Reference, sources.Digests(src))
	if dialect.Urgent(src.GetAnnotations()) && !slices.Contains(in.Urgent, c.Source) {
		in.Urgent = append(in.Urgent, c.Source)
	}
	paused, err := dialect.Paused(src.GetAnnotations())
	if err != nil {
		rd.pauses[c.Source] = fmt.Errorf("%s: %w; it counts as not paused", refs.Names([]refs.Source{c.Source}), err)
	}
	if paused && !slices.Contains(in.PausedSources, c.Source) {
		in.PausedSources = append(in.PausedSources, c.Source)
	}
	rd.versions[c.Source] = src.GetResourceVersion()
	if r.Producers != nil && c.Kind == refs.Secret {
		st, err := r.Producers.Of(ctx, src)
		if err != nil {
			return "", fmt.Errorf("reading the producer of %s: %w", c.Source, err)
		}
		rd.producers[c.Source] = st
	}
	return Counted, nil
}

// Get reads the ConfigMap or Secret s from the Reader, returning its error
// (NotFound when s does not exist).
func (r Selector) Get(ctx context.Context, s refs.Source) (client.Object, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if s.Kind == refs.Secret {
		obj = &corev1.Secret{}
	}
	err := r.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, obj)
	return obj, err
}

// ContentDigest returns sources.ContentDigest of src as the cache holds it
// now, "" for kinds of source other than ConfigMaps and Secrets. It returns
// the cache's error.
func (r Resolver) ContentDigest(ctx context.Context, src refs.Source) (string, error) {
	if src.Kind != refs.ConfigMap && src.Kind != refs.Secret {
		return "", nil
	}
	obj, err := r.Get(ctx, src)
	switch {
	case apierrors.IsNotFound(err):
		return sources.ContentDigest(r.Key, src, nil), nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", src, err)
	}
	return sources.ContentDigest(r.Key, src, obj), nil
}

// Reads returns, of the references resolved, those whose content the
// workload's pods read or whose absence they start with (Counted, or a
// source that does not exist), for first sight (see memo.Births.Young),
// and the resourceVersion of each Counted source, and of each source that
// does not exist whose deletion deleted tells (sources.Changes.Deleted):
// the version of its absence (see memo.Births.Settled).
func Reads(resolved []Resolved, deleted func(refs.Source) (string, bool)) ([]memo.Read, map[refs.Source]string) {
	var reads []memo.Read
	versions := map[refs.Source]string{}
	for _, c := range resolved {
		switch c.Outcome {
		case Counted:
			versions[c.Source] = c.Version
		case AbsentOptional, Missing, Kept:
			if v, ok := deleted(c.Source); ok {
				versions[c.Source] = v
			}
		default:
			continue
		}
		reads = append(reads, memo.Read{Reference: c.Reference, AbsenceCounts: c.AbsenceCounts})
	}
	return reads, versions
}
