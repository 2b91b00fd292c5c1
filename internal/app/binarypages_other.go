//go:build !linux

package app

// releaseBinaryPages does nothing outside Linux: see the Linux version.
func releaseBinaryPages() (uint64, error) { return 0, nil }
