package app

import (
	"bytes"
	"testing"
	"time"

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
