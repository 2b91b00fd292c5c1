package dialect

import (
	"fmt"
	"strings"
)

// Ignored is Parser.Ignored with Reloader's default annotation names.
func Ignored(sourceAnnotations map[string]string) bool {
	return Parser{}.Ignored(sourceAnnotations)
}

// Matched is Parser.Matched with Reloader's default annotation names.
func Matched(sourceAnnotations map[string]string) bool {
	return Parser{}.Matched(sourceAnnotations)
}

// Ignored reports whether a ConfigMap's or Secret's own annotations say it
// counts for no workload: nudge.dev/ignore or Reloader's
// reloader.stakater.com/ignore
// (https://github.com/stakater/Reloader#how-to-use-reloader), or the name
// --ignore-annotation gives it, is "true", in any case, spaces around it
// trimmed. Any other value, or none, is false.
func (p Parser) Ignored(sourceAnnotations map[string]string) bool {
	return isTrue(sourceAnnotations[NudgeIgnore]) || isTrue(sourceAnnotations[p.Reloader().Ignore])
}

// Matched reports whether a ConfigMap's or Secret's own annotations mark it
// for workloads in Reloader's search mode: reloader.stakater.com/match (or
// the name --search-match-annotation gives it) is "true"
// (https://github.com/stakater/Reloader#how-to-use-reloader), in any case,
// spaces around it trimmed. Any other value, or none, is false.
func (p Parser) Matched(sourceAnnotations map[string]string) bool {
	return isTrue(sourceAnnotations[p.Reloader().Match])
}

// Urgent reports whether a ConfigMap's or Secret's own annotations mark a
// change of it urgent: nudge.dev/urgent is "true" (in any case, spaces
// around it trimmed). Its workloads roll for it outside their maintenance
// window.
func Urgent(sourceAnnotations map[string]string) bool {
	return isTrue(sourceAnnotations[NudgeUrgent])
}

// Paused reads a ConfigMap's or Secret's own nudge.dev/paused: "true"
// holds the rollouts its changes would make (in any case, spaces around it
// trimmed). Absent or "false" is false; any other value is false too, with
// an error wrapping ErrNotBool naming the annotation: a pause nobody can
// read holds nothing, so a typo never keeps a change from rolling unseen
// (the caller warns).
func Paused(sourceAnnotations map[string]string) (bool, error) {
	v, ok := sourceAnnotations[NudgePaused]
	if !ok {
		return false, nil
	}
	b, err := parseBool(v)
	if err != nil {
		return false, fmt.Errorf("annotation %s: %w", NudgePaused, err)
	}
	return b, nil
}

// isTrue reports whether v is "true" as parseBool reads it. It builds no
// error for any other value: the source handlers ask it several times of
// every source event, mostly of an annotation that is not there.
func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// parseBool reads "true" or "false" in any case, spaces around it trimmed.
func parseBool(v string) (bool, error) {
	switch t := strings.TrimSpace(v); {
	case strings.EqualFold(t, "true"):
		return true, nil
	case strings.EqualFold(t, "false"):
		return false, nil
	default:
		return false, notBool(v)
	}
}

// SourceAnnotations returns the annotations of a source that p.Ignored,
// p.Matched, Urgent and Paused read; a cache of sources may drop every other.
func (p Parser) SourceAnnotations() []string {
	n := p.Reloader()
	return []string{NudgeIgnore, n.Ignore, n.Match, NudgeUrgent, NudgePaused}
}
