package app

import (
	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"nudge.dev/nudge/internal/options"
)

// Logger returns the logger opts ask for: JSON or console text, at the level
// of --log-level (Reloader's names; "trace" and "debug" enable V(1) and more).
func Logger(opts options.Options) logr.Logger {
	level := map[string]zapcore.Level{
		"trace": -2, "debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "warning": zapcore.WarnLevel,
		"error": zapcore.ErrorLevel, "fatal": zapcore.FatalLevel, "panic": zapcore.PanicLevel,
	}[opts.LogLevel]
	zo := []zap.Opts{zap.Level(level), zap.UseDevMode(false)}
	if opts.LogFormat == "json" {
		zo = append(zo, zap.JSONEncoder())
	} else {
		zo = append(zo, zap.ConsoleEncoder())
	}
	return zap.New(zo...)
}
