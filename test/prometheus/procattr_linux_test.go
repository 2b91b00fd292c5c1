package prometheus

import "syscall"

// sysProcAttr has the kernel SIGKILL Prometheus when the thread that
// started it dies, in practice when the test binary exits for any reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
