package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// rolledMessage starts the message nudge logs, in Reloader's words, when it
// rolls a workload.
const rolledMessage = "Changes detected in "

// logLine is one line of nudge's log, split into its parts.
type logLine struct {
	level   string // INFO, ERROR, …
	message string
	fields  string // the line's other key-value pairs, as key=value, sorted
	raw     string // the whole line, time and fields included
}

// parseLogLine splits a line of nudge's JSON log (--log-format json:
// Reloader's JSON lines, an object with time, level, msg and the line's
// key-value pairs); the level is kept upper-case ("INFO", "WARNING"). A line
// in another format (a fatal error printed by main) has only raw.
func parseLogLine(raw string) logLine {
	l := logLine{raw: raw}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return l
	}
	level, _ := obj["level"].(string)
	msg, _ := obj["msg"].(string)
	if level == "" {
		return l
	}
	l.level, l.message = strings.ToUpper(level), msg
	delete(obj, "time")
	delete(obj, "level")
	delete(obj, "msg")
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v, err := json.Marshal(obj[k])
		if err != nil {
			continue
		}
		fields = append(fields, k+"="+string(v))
	}
	l.fields = strings.Join(fields, " ")
	return l
}

// interesting reports whether a user of the demo should see the line: nudge
// starting, a rollout, any warning or error, and any line not in nudge's own
// format.
func (l logLine) interesting() bool {
	switch l.level {
	case "":
		return strings.TrimSpace(l.raw) != ""
	case "TRACE", "DEBUG", "INFO":
		return strings.HasPrefix(l.message, "Starting nudge") || strings.HasPrefix(l.message, rolledMessage)
	default:
		return true
	}
}

// display returns the line as the demo shows it: the message alone for a
// rollout (its fields repeat it), the message and its fields for other
// information, the level, message and fields otherwise.
func (l logLine) display() string {
	switch {
	case l.level == "":
		return l.raw
	case strings.HasPrefix(l.message, rolledMessage):
		return l.message
	case l.level == "INFO":
		return strings.TrimSpace(l.message + " " + l.fields)
	default:
		return strings.TrimSpace(l.level + "  " + l.message + "  " + l.fields)
	}
}
