//go:build !unix

package offheap

func mapAnon(int) ([]byte, bool) { return nil, false }

func unmap([]byte) bool { return false }
