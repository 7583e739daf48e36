//go:build !linux

package e2e

import "syscall"

// sysProcAttr has no portable parent-death signal; the harness's stop is the only cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
