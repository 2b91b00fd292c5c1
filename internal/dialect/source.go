package dialect

import "strings"

// Ignored reports whether a ConfigMap's or Secret's own annotations say it
// counts for no workload: nudge.dev/ignore or Reloader's
// reloader.stakater.com/ignore
// (https://github.com/stakater/Reloader#how-to-use-reloader) is "true", in
// any case, spaces around it trimmed. Any other value, or none, is false.
func Ignored(sourceAnnotations map[string]string) bool {
	return isTrue(sourceAnnotations[NudgeIgnore]) || isTrue(sourceAnnotations[ReloaderIgnore])
}

// Matched reports whether a ConfigMap's or Secret's own annotations mark it
// for workloads in Reloader's search mode: reloader.stakater.com/match is
// "true" (https://github.com/stakater/Reloader#how-to-use-reloader), in any
// case, spaces around it trimmed. Any other value, or none, is false.
func Matched(sourceAnnotations map[string]string) bool {
	return isTrue(sourceAnnotations[ReloaderMatch])
}

func isTrue(v string) bool {
	b, err := parseBool(v)
	return err == nil && b
}

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

// SourceAnnotations are the annotations of a source that Ignored and Matched
// read; a cache of sources may drop every other.
var SourceAnnotations = []string{NudgeIgnore, ReloaderIgnore, ReloaderMatch}
