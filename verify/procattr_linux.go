//go:build linux

package verify

import "syscall"

// procAttr makes the kernel kill a cluster process when the verify process
// dies, so that no process of the cluster outlives it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
