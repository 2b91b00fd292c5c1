// Package version holds which nudge this is: the version stamped into the
// binary at build time, else what the Go toolchain recorded of the source.
package version
