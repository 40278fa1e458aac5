package sstable

import "slices"

// allocBlock returns a zeroed slice of length n whose capacity is the
// memory the allocator gives it (slices.Grow rounds up to the
// allocation's size class), for metadata blocks a Reader keeps: what it
// reports holding is then the real memory. Data blocks are blockBufs
// (blockbuf.go), whose capacity is a size class too.
func allocBlock(n int) []byte { return slices.Grow([]byte(nil), n)[:n] }
