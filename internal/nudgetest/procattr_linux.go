package nudgetest

import "syscall"

// sysProcAttr has the kernel SIGKILL a nudge process when the thread that
// started it dies, in practice when the test binary exits for any reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
