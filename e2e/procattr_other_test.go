//go:build !linux

package e2e

import "syscall"

// procAttr has nothing to add off Linux; t.Cleanup kills the processes.
func procAttr() *syscall.SysProcAttr { return nil }
