package testbed

import "syscall"

// sysProcAttr puts a component in a process group of its own and has the
// kernel SIGKILL it when the thread that started it dies. Go does not end
// its threads while the process runs (unless a goroutine locked to one exits,
// which this package never does), so in practice this fires when the test
// binary exits for any reason, including SIGKILL and a test timeout.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
