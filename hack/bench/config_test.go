package main

import (
	"slices"
	"strings"
	"testing"
)

// The flags of the large and kinds scenarios: defaults, and the values
// parseConfig refuses.
func TestParseConfigLargeAndKinds(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string // "" for none
	}{
		"defaults":                    {nil, ""},
		"the floor's kinds":           {[]string{"-kinds", "Deployment"}, ""},
		"an unknown kind":             {[]string{"-kinds", "Deployment,Pod"}, `unknown kind "Pod"`},
		"no kind for kinds":           {[]string{"-kinds", "", "-scenarios", "kinds"}, "at least one kind"},
		"no kind without kinds":       {[]string{"-kinds", "", "-scenarios", "large"}, ""},
		"sources over 1 MiB":          {[]string{"-large-bytes", "1048577"}, "up to 1 MiB"},
		"no change of large sources":  {[]string{"-large-changes", "0"}, "-large-changes of at least 1"},
		"large flags without large":   {[]string{"-large-changes", "0", "-scenarios", "kinds"}, ""},
		"fewer than 16 bytes per key": {[]string{"-large-bytes", "40", "-keys", "4"}, "16 per key"},
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
			if name == "defaults" {
				if !c.Has("large") || !c.Has("kinds") || !slices.Equal(c.Kinds, allKinds) || c.LargeSources != 20 || c.LargeBytes != 900<<10 || c.LargeChanges != 3 {
					t.Errorf("defaults: scenarios %v, kinds %v, large %d × %d bytes × %d changes", c.Scenarios, c.Kinds, c.LargeSources, c.LargeBytes, c.LargeChanges)
				}
			}
		})
	}
}
