package version

import (
	"runtime"
	"runtime/debug"
)

// stamped is set at build time with
//
//	-ldflags "-X nudge.dev/nudge/internal/version.stamped=$(git describe --tags --always --dirty)"
//
// as `make build` and the Dockerfile do. The linker can only set a package
// variable, so this is one; nothing writes it at run time.
var stamped string

// Get returns nudge's version: the stamped one when set; else, for a plain
// `go build` in a Git checkout, the VCS revision the toolchain recorded (its
// first 12 hex digits, "-dirty" added when the tree had changes); else the
// module's version when built with `go install module@version`; else "dev".
func Get() string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo is Get's fallback, given the toolchain's build information.
func fromBuildInfo(bi *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		return rev
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

// GoVersion returns the version of Go the binary was built with, e.g.
// "go1.26.0".
func GoVersion() string { return runtime.Version() }
