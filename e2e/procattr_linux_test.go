//go:build linux

package e2e

import "syscall"

// procAttr makes the kernel kill a child process when the test binary dies
// (a timeout panic, a crash), so no tabula process outlives the tests.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
