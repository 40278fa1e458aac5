package unzeroed

import (
	"slices"
	"testing"
)

// Bytes gives the length asked for and the capacity slices.Grow would
// (the allocation's size class), and the memory is the caller's to write.
func TestBytesHasTheLengthAndTheAllocationsCapacity(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 4096, 5000, 1 << 20} {
		b := Bytes(n)
		want := slices.Grow([]byte(nil), n)
		if len(b) != n || (n > 0 && cap(b) != cap(want)) {
			t.Fatalf("Bytes(%d): len %d cap %d; slices.Grow gives cap %d", n, len(b), cap(b), cap(want))
		}
		for i := range b {
			b[i] = byte(i)
		}
	}
}
