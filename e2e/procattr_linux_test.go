package e2e

import "syscall"

// sysProcAttr makes the kernel kill a started stitch process when the test binary dies
// (a panic or a killed `go test` must not leave servers holding ports).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
