package certmanager

import "syscall"

// sysProcAttr has the kernel SIGKILL a process the test started (cert-manager's)
// when the thread that started it dies, in practice when the test binary
// exits for any reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
