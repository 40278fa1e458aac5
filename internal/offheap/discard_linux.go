package offheap

import "syscall"

// discard gives m's pages (whole pages of a mapping) back to the OS; the
// mapping stays, and reads as zeros where touched again.
func discard(m []byte) bool { return syscall.Madvise(m, syscall.MADV_DONTNEED) == nil }
