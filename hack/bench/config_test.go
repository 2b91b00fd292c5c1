package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The flags of the large, kinds and random scenarios: defaults, and the values
// parseConfig refuses.
func TestParseConfigScenarios(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string // "" for none
	}{
		"defaults":                               {nil, ""},
		"the floor's kinds":                      {[]string{"-kinds", "Deployment"}, ""},
		"an unknown kind":                        {[]string{"-kinds", "Deployment,Pod"}, `unknown kind "Pod"`},
		"no kind for kinds":                      {[]string{"-kinds", "", "-scenarios", "kinds"}, "at least one kind"},
		"no kind without kinds":                  {[]string{"-kinds", "", "-scenarios", "large"}, ""},
		"sources over 1 MiB":                     {[]string{"-large-bytes", "1048577"}, "up to 1 MiB"},
		"no change of large sources":             {[]string{"-large-changes", "0"}, "-large-changes of at least 1"},
		"large flags without large":              {[]string{"-large-changes", "0", "-scenarios", "kinds"}, ""},
		"fewer than 16 bytes per key":            {[]string{"-large-bytes", "40", "-keys", "4"}, "16 per key"},
		"five random runs":                       {[]string{"-scenarios", "random,random-restart", "-random-runs", "5"}, ""},
		"no random run":                          {[]string{"-random-runs", "0"}, "-random-runs of at least 1"},
		"a restart after the stream":             {[]string{"-random-restart-at", "60s"}, "-random-restart-at above 0 and below -random-for"},
		"a random stream of one update":          {[]string{"-random-rate", "1", "-random-for", "1s", "-scenarios", "random"}, "at least two updates"},
		"random flags without random":            {[]string{"-random-runs", "0", "-scenarios", "steady"}, ""},
		"shards alone, no scenario named":        {[]string{"-shards", "8", "-shards-only"}, ""},
		"shards alone on the scale run's preset": {[]string{"-scale-run", "-shards", "8", "-shards-only"}, ""},
		"shards alone without shards":            {[]string{"-shards-only"}, "-shards-only needs -shards of at least 1"},
		"shards alone with a scenario":           {[]string{"-shards", "8", "-shards-only", "-scenarios", "latency"}, "runs no scenario"},
		"shards alone with a restart":            {[]string{"-shards", "8", "-shards-only", "-restart-cmd", "bin/nudge {kubeconfig}"}, "nor -restart-cmd"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c, err := parseConfig(tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("parseConfig(%q): %v", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("parseConfig(%q) = %v, want an error with %q", tt.args, err, tt.wantErr)
			}
			if tt.wantErr == "" && slices.Contains(tt.args, "-shards-only") && len(c.Scenarios) > 0 {
				t.Errorf("-shards-only runs scenarios %v, want none", c.Scenarios)
			}
			if name == "defaults" {
				if !c.Has("large") || !c.Has("kinds") || !slices.Equal(c.Kinds, allKinds) || c.LargeSources != 20 || c.LargeBytes != 900<<10 || c.LargeChanges != 3 ||
					!c.Has("random") || !c.Has("random-restart") || c.RandomRate != 20 || c.RandomSources != 100 || c.RandomFor != 60*time.Second ||
					c.RandomSeed != 1 || c.RandomRestartRate != 5 || c.RandomRestartAt != 10*time.Second || c.RandomRuns != 1 {
					t.Errorf("defaults: scenarios %v, kinds %v, large %d × %d bytes × %d changes, random %+v", c.Scenarios, c.Kinds, c.LargeSources, c.LargeBytes, c.LargeChanges,
						[]any{c.RandomRate, c.RandomSources, c.RandomFor, c.RandomSeed, c.RandomRestartRate, c.RandomRestartAt, c.RandomRuns})
				}
			}
		})
	}
}
