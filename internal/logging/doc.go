// Package logging holds the logger nudge writes with: log/slog's text or
// JSON handler behind logr, at the level of --log-level, its JSON lines in
// the shape of Reloader's so that a migrated install's log queries still
// match.
package logging
