package version

import (
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFromBuildInfo(t *testing.T) {
	tests := map[string]struct {
		info *debug.BuildInfo
		want string
	}{
		"a clean checkout gives the revision's first 12 digits": {
			info: &debug.BuildInfo{Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "186ef1d2a3b4c5d6e7f8091a2b3c4d5e6f708192"}, {Key: "vcs.modified", Value: "false"},
			}},
			want: "186ef1d2a3b4",
		},
		"a tree with changes is marked dirty": {
			info: &debug.BuildInfo{Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "186ef1d2a3b4c5d6e7f8091a2b3c4d5e6f708192"}, {Key: "vcs.modified", Value: "true"},
			}},
			want: "186ef1d2a3b4-dirty",
		},
		"go install module@version gives the module version": {
			info: &debug.BuildInfo{Main: debug.Module{Path: "nudge.dev/nudge", Version: "v0.3.0"}},
			want: "v0.3.0",
		},
		"a build without VCS information is dev": {
			info: &debug.BuildInfo{Main: debug.Module{Path: "nudge.dev/nudge", Version: "(devel)"}},
			want: "dev",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(fromBuildInfo(tc.info)).To(Equal(tc.want))
		})
	}
}

func TestGetIsNeverEmpty(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Get()).NotTo(BeEmpty(), "an unstamped test binary still has a version")
	g.Expect(GoVersion()).To(HavePrefix("go"))
}
