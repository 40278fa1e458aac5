//go:build !linux

package verify

import "syscall"

// procAttr has nothing to add outside Linux.
func procAttr() *syscall.SysProcAttr { return nil }
