package app

import (
	"io"
	"log/slog"
	"os"

	"github.com/go-logr/logr"

	"nudge.dev/nudge/internal/options"
)

// logLevels maps --log-level (Reloader's names) to slog levels; logr's V(n)
// logs at level -n, so "debug" enables V(1) and "trace" V(2).
var logLevels = map[string]slog.Level{
	"trace": -2, "debug": -1, "info": slog.LevelInfo, "warning": slog.LevelWarn,
	"error": slog.LevelError, "fatal": slog.LevelError + 4, "panic": slog.LevelError + 4,
}

// Logger returns the logger opts ask for: log/slog's text (key=value) or JSON
// handler on standard error, at the level of --log-level. Unlike zap's
// production logger it keeps no sampling state: every line is written.
func Logger(opts options.Options) logr.Logger { return loggerTo(os.Stderr, opts) }

func loggerTo(w io.Writer, opts options.Options) logr.Logger {
	ho := &slog.HandlerOptions{Level: logLevels[opts.LogLevel], ReplaceAttr: durationText}
	if opts.LogFormat == "json" {
		return logr.FromSlogHandler(slog.NewJSONHandler(w, ho))
	}
	return logr.FromSlogHandler(slog.NewTextHandler(w, ho))
}

// durationText writes a duration as Go writes it ("5s"), not in nanoseconds
// as the JSON handler would.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
