//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts nudge in a process group of its own, so that a Ctrl-C in
// the terminal reaches the demo alone. Only Linux has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
