package main

import (
	"strings"
	"time"
)

// rolledMessage starts the message nudge logs, in Reloader's words, when it
// rolls a workload.
const rolledMessage = "Changes detected in "

// logLine is one line of nudge's console log, split into its parts.
type logLine struct {
	level   string // INFO, ERROR, …
	message string
	fields  string // the JSON object of the line's key-value pairs, if any
	raw     string // the whole line, timestamp and fields included
}

// parseLogLine splits a line of nudge's console log (zap's console encoder:
// time, level, message and a JSON object of fields, separated by tabs). A
// line in another format (klog, a fatal error printed by main) has only raw.
func parseLogLine(raw string) logLine {
	l := logLine{raw: raw}
	fields := strings.Split(raw, "\t")
	if len(fields) < 3 {
		return l
	}
	if _, err := time.Parse(time.RFC3339Nano, fields[0]); err != nil {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", fields[0]); err != nil {
			return l
		}
	}
	l.level, l.message = fields[1], fields[2]
	l.fields = strings.Join(fields[3:], " ")
	return l
}

// interesting reports whether a user of the demo should see the line: nudge
// starting, a rollout, any warning or error, and any line not in nudge's own
// format.
func (l logLine) interesting() bool {
	switch l.level {
	case "":
		return strings.TrimSpace(l.raw) != ""
	case "DEBUG", "INFO":
		return strings.HasPrefix(l.message, "Starting nudge") || strings.HasPrefix(l.message, rolledMessage)
	default:
		return true
	}
}

// display returns the line as the demo shows it: the message alone for a
// rollout (its fields repeat it), the message and its fields for other
// information, the level and everything after it otherwise.
func (l logLine) display() string {
	switch {
	case l.level == "":
		return l.raw
	case strings.HasPrefix(l.message, rolledMessage):
		return l.message
	case l.level == "INFO":
		return strings.TrimSpace(l.message + " " + l.fields)
	default:
		_, rest, _ := strings.Cut(l.raw, "\t")
		return strings.ReplaceAll(rest, "\t", "  ")
	}
}
