//go:build !linux

package prometheus

import "syscall"

// sysProcAttr is nil where the kernel cannot kill Prometheus with the test
// binary.
func sysProcAttr() *syscall.SysProcAttr { return nil }
