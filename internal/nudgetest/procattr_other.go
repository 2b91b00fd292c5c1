//go:build !linux

package nudgetest

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
