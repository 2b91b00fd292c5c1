package logging

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"

	"nudge.dev/nudge/internal/options"
)

// logLevels maps --log-level (Reloader's names) to slog levels; logr's V(n)
// logs at level -n, so "debug" enables V(1) and "trace" V(2).
var logLevels = map[string]slog.Level{
	"trace": -2, "debug": -1, "info": slog.LevelInfo, "warning": slog.LevelWarn,
	"error": slog.LevelError, "fatal": slog.LevelError + 4, "panic": slog.LevelError + 4,
}

// New returns the logger opts ask for: log/slog's text (key=value) or JSON
// handler (--log-format) on standard error, at the level of --log-level.
// Unlike zap's production logger it keeps no sampling state: every line is
// written. JSON lines take the shape of Reloader's (see reloaderJSON).
func New(opts options.Options) logr.Logger { return loggerTo(os.Stderr, opts) }

func loggerTo(w io.Writer, opts options.Options) logr.Logger {
	ho := &slog.HandlerOptions{Level: logLevels[opts.LogLevel], ReplaceAttr: durationText}
	if opts.LogFormat == "json" {
		ho.ReplaceAttr = reloaderJSON
		return logr.FromSlogHandler(slog.NewJSONHandler(w, ho))
	}
	return logr.FromSlogHandler(slog.NewTextHandler(w, ho))
}

// reloaderJSON writes the JSON handler's lines in the shape of Reloader's
// with --log-format=json (logrus's JSONFormatter, set up in Reloader's
// internal/pkg/cmd/reloader.go): "level" as logrus names it ("trace",
// "debug", "info", "warning", "error"), "msg", and "time" in RFC 3339 to the
// second; durations as durationText writes them.
func reloaderJSON(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.LevelKey:
			return slog.String(a.Key, reloaderLevel(a.Value.Any().(slog.Level)))
		case slog.TimeKey:
			return slog.String(a.Key, a.Value.Time().Format(time.RFC3339))
		}
	}
	return durationText(groups, a)
}

// reloaderLevel names level as logrus does; logr's V(1) is slog's -1
// ("debug"), V(2) and beyond "trace".
func reloaderLevel(level slog.Level) string {
	switch {
	case level < -1:
		return "trace"
	case level < slog.LevelInfo:
		return "debug"
	case level < slog.LevelWarn:
		return "info"
	case level < slog.LevelError:
		return "warning"
	default:
		return "error"
	}
}

// durationText writes a duration as Go writes it ("5s"), not in nanoseconds
// as the JSON handler would.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
