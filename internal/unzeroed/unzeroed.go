// Package unzeroed allocates byte slices whose memory the runtime does not
// clear first, for callers that overwrite every byte they use at once (a
// decompression, a copy): clearing it cost a tenth of a cold scan's CPU
// (docs/BENCHMARKS.md, "Blocks decoded into memory that is not zeroed").
package unzeroed

import (
	"strings"
	"unsafe"
)

// Bytes returns a slice of length n whose capacity is the memory the
// allocator gives it, with undefined contents: the caller must write
// every byte it reads. Go has no public call for memory it does not
// zero; a strings.Builder grows into such memory (it overwrites what it
// gets), and the slice takes the builder's allocation over.
func Bytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), sb.Cap())[:n]
}
