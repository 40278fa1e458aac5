package sstable

import "testing"

// allocBlockUnzeroed gives what allocBlock gives but for the zeroing: n
// bytes, and the capacity of the allocation the cache charges.
func TestAllocBlockUnzeroedMatchesAllocBlock(t *testing.T) {
	for _, n := range []int{0, 1, 100, 4095, 4096, 4097, 16 << 10, 100 << 10, 1 << 20} {
		a, b := allocBlock(n), allocBlockUnzeroed(n)
		if len(b) != n || cap(b) != cap(a) {
			t.Errorf("allocBlockUnzeroed(%d): len %d cap %d; allocBlock: len %d cap %d", n, len(b), cap(b), len(a), cap(a))
		}
	}
}
