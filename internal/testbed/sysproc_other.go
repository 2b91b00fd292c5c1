//go:build unix && !linux

package testbed

import "syscall"

// sysProcAttr puts a component in a process group of its own. Outside Linux
// there is no parent-death signal: a test binary killed with SIGKILL leaves
// its components running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
