package resolve

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// Warnings returns the Warning causes of a workload's references as
// resolved (a source refused, in a namespace not watched, or missing; a
// malformed pause) and of its annotations refused (see Resolver.Limits).
func Warnings(resolved []Resolved, refused []Override) []record.Cause {
	var causes []record.Cause
	for _, o := range refused {
		causes = append(causes, record.Cause{Reason: record.ReasonOverrideRefused, Note: fmt.Sprintf(
			"Annotation %s %q would loosen %s (%s); used %s (only --allow-workload-overrides lets annotations loosen the flags' limits)",
			o.Annotation, o.Value, o.Flag, o.Limit, o.Limit)})
	}
	for _, c := range resolved {
		switch c.Outcome {
		case Refused:
			causes = append(causes, record.Cause{Reason: record.ReasonCrossNamespaceRefused, Note: fmt.Sprintf(
				"Did not read %s %s/%s: nudge refuses references to another namespace (--cross-namespace-references=deny); it counts for nothing",
				c.Kind, c.Namespace, c.Name)})
		case Unwatched:
			causes = append(causes, record.Cause{Reason: record.ReasonNamespaceNotWatched, Note: fmt.Sprintf(
				"Cannot read %s %s/%s: nudge does not watch namespace %q", c.Kind, c.Namespace, c.Name, c.Namespace)})
		case Kept, Missing:
			causes = append(causes, record.Cause{Reason: record.ReasonSourceMissing, Note: c.MissingNote()})
		}
		if c.PauseError != nil {
			causes = append(causes, record.Cause{Reason: record.ReasonMalformedAnnotation, Note: c.PauseError.Error()})
		}
	}
	return causes
}

// MissingNote is the note of the SourceMissing Warning about c, a reference
// whose source does not exist (outcome Missing or Kept).
func (c Resolved) MissingNote() string {
	if c.Outcome == Kept {
		return fmt.Sprintf("Named %s %s/%s does not exist; its absence rolls nothing", c.Kind, c.Namespace, c.Name)
	}
	return fmt.Sprintf("Required %s %s/%s does not exist; no rollout until it does", c.Kind, c.Namespace, c.Name)
}

// ProducerWarning returns the Warning ProducerNotReady of a rollout d, of a
// workload in namespace, for a Secret whose producer was still not ready
// after timeout (late). It names the producer and quotes its reason only for
// a Secret of the workload's own namespace: of another namespace's (a
// cross-namespace reference), whose producer's condition the workload's
// owner may not read, it says only that the producer was not ready.
func ProducerWarning(d rollout.Decision, late []Resolved, timeout time.Duration, namespace string) (record.Cause, bool) {
	if d.Action != rollout.Roll {
		return record.Cause{}, false
	}
	var named []string
	for _, c := range late {
		switch {
		case !slices.Contains(d.Changed, c.Source):
		case c.Namespace != namespace:
			named = append(named, fmt.Sprintf("%s (its producer: not ready)", refs.Names([]refs.Source{c.Source})))
		default:
			named = append(named, fmt.Sprintf("%s (%s: %s)", refs.Names([]refs.Source{c.Source}), c.Producer.Producer, c.Producer.Reason))
		}
	}
	if len(named) == 0 {
		return record.Cause{}, false
	}
	return record.Cause{Reason: record.ReasonProducerNotReady, Note: fmt.Sprintf(
		"Rolled for %s though its producer was not ready after %s (--producer-ready-timeout)", strings.Join(named, ", "), timeout)}, true
}
