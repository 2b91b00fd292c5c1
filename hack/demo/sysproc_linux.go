package main

import "syscall"

// sysProcAttr puts nudge in a process group of its own, so that a Ctrl-C in
// the terminal reaches the demo alone (which then stops nudge before the
// plane), and has the kernel SIGKILL it when the demo dies, so that it never
// outlives the plane.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
