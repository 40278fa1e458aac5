//go:build unix

package offheap

import "syscall"

const pageSize = 4096

// mapAnon maps n bytes (rounded up to whole pages) of private, zeroed
// memory; the slice's capacity is the mapping's length.
func mapAnon(n int) ([]byte, bool) {
	size := (n + pageSize - 1) &^ (pageSize - 1)
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, false
	}
	return m, true
}

func unmap(m []byte) bool { return syscall.Munmap(m) == nil }
