//go:build !linux

package certmanager

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
