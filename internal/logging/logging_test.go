package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/options"
)

// TestLogLevels: --log-level decides which of logr's verbosities are written,
// and durations read as Go writes them.
func TestLogLevels(t *testing.T) {
	for level, want := range map[string][]bool{ // V(0), V(1), V(2) written
		"info": {true, false, false}, "debug": {true, true, false}, "trace": {true, true, true},
		"warning": {false, false, false}, "error": {false, false, false},
	} {
		var buf bytes.Buffer
		log := loggerTo(&buf, options.Options{LogLevel: level, LogFormat: "json"})
		for v, w := range want {
			if got := log.V(v).Enabled(); got != w {
				t.Errorf("--log-level=%s: V(%d) enabled = %v, want %v", level, v, got, w)
			}
		}
		log.Error(nil, "failed", "after", 1500*time.Millisecond)
		if !bytes.Contains(buf.Bytes(), []byte(`"after":"1.5s"`)) {
			t.Errorf("--log-level=%s: an error line %q, want it written with \"after\":\"1.5s\"", level, buf.String())
		}
	}
}

// TestReloaderJSON: --log-format=json writes Reloader's JSON lines (logrus's
// JSONFormatter): level named as logrus names it, msg, time in RFC 3339 to
// the second; nudge's key-value pairs beside them.
func TestReloaderJSON(t *testing.T) {
	tests := map[string]struct {
		log       func(l logr.Logger)
		wantLevel string
	}{
		"an Info line is info":          {func(l logr.Logger) { l.Info("Rolled") }, "info"},
		"a V(1) line is debug":          {func(l logr.Logger) { l.V(1).Info("Rolled") }, "debug"},
		"a V(2) line is trace":          {func(l logr.Logger) { l.V(2).Info("Rolled") }, "trace"},
		"an Error line is error":        {func(l logr.Logger) { l.Error(errors.New("boom"), "Rolled") }, "error"},
		"a slog Warn line is warning":   {func(l logr.Logger) { slog.New(logr.ToSlogHandler(l)).Warn("Rolled") }, "warning"},
		"a line with values keeps them": {func(l logr.Logger) { l.Info("Rolled", "kind", "Deployment") }, "info"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var buf bytes.Buffer
			tc.log(loggerTo(&buf, options.Options{LogLevel: "trace", LogFormat: "json"}))
			var line map[string]any
			g.Expect(json.Unmarshal(buf.Bytes(), &line)).To(Succeed(), "one JSON object: %s", buf.String())
			g.Expect(line).To(HaveKeyWithValue("level", tc.wantLevel))
			g.Expect(line).To(HaveKeyWithValue("msg", "Rolled"))
			g.Expect(line).To(HaveKey("time"))
			at, err := time.Parse(time.RFC3339, line["time"].(string))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(line["time"]).To(Equal(at.Format(time.RFC3339)), "to the second, as logrus writes it")
			if v, ok := line["kind"]; ok {
				g.Expect(v).To(Equal("Deployment"))
			}
		})
	}
}

// TestTextLevelsUnchanged: nudge's default, text, keeps slog's level names.
func TestTextLevelsUnchanged(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	loggerTo(&buf, options.Options{LogLevel: "info", LogFormat: "text"}).Info("Rolled")
	g.Expect(buf.String()).To(ContainSubstring("level=INFO"))
}
