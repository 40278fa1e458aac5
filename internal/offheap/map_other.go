//go:build !unix

package offheap

const pageSize = 4096

func mapAnon(int) ([]byte, bool) { return nil, false }

func unmap([]byte) bool { return false }
