// Package offheap hands out large byte buffers that live outside the Go
// heap, in anonymous memory maps.
//
// The garbage collector lets the heap grow to about twice what is live
// before it collects (GOGC=100), so every byte an engine keeps on the
// heap for long costs about two bytes of the process's memory. The
// tablet engine's largest long-lived allocations are pointer-free bytes
// whose lifetime it knows: an open SSTable's decoded index and bloom
// filter, and an SSTable writer's filter bits and index block. Held here
// they cost their own size, as pebble's manually managed block cache and
// memtables do (docs/BENCHMARKS.md, "Where the memory goes at 4M keys").
//
// A buffer is released by Free, or, if its owner never calls Free, once
// its *Buf is unreachable (a runtime cleanup unmaps it after the garbage
// collector finds it so). The second way suits memory that readers may
// still use after its owner drops it: as long as a reader holds the *Buf
// (directly or through the object that owns it), the memory stays
// mapped. Slices of a buffer do not keep it alive, unlike heap slices:
// whoever slices it must hold the *Buf for as long as it uses the slice.
//
// Buffers below MinSize, buffers past MaxMaps mappings, and every buffer
// where memory maps are not available are ordinary heap slices: a map
// costs a system call and whole pages, and a process has a bounded number
// of them (Linux: vm.max_map_count, 65530 by default), which the Go
// runtime needs too (it fails fatally when it cannot map heap).
package offheap

import (
	"runtime"
	"sync/atomic"
)

const (
	// MinSize is the smallest buffer Alloc maps outside the heap: about
	// the index or the filter of a file flushed from a 4 MiB memtable.
	MinSize = 32 << 10
	// MaxMaps bounds the mappings Alloc holds at once, a quarter of
	// Linux's default limit.
	MaxMaps = 16384
)

// Buf is a buffer of bytes, zeroed when allocated.
type Buf struct {
	b []byte
	// m is the whole mapping, nil for a heap buffer: unmapping needs the
	// slice the map returned. held is how much of it is counted in Mapped
	// (all of it unless Shrink gave pages back).
	m       []byte
	held    int
	cleanup runtime.Cleanup
}

var mapped, maps atomic.Int64

// Mapped returns the bytes of the buffers mapped outside the heap and not
// yet released (page-rounded), for memory metrics.
func Mapped() int64 { return mapped.Load() }

// Alloc returns a zeroed buffer of n bytes.
func Alloc(n int) *Buf {
	if n >= MinSize {
		if maps.Add(1) <= MaxMaps {
			if m, ok := mapAnon(n); ok {
				b := &Buf{b: m[:n:n], m: m, held: len(m)}
				mapped.Add(int64(len(m)))
				b.cleanup = runtime.AddCleanup(b, release, mapping{m, len(m)})
				return b
			}
		}
		maps.Add(-1) // no map taken
	}
	return &Buf{b: make([]byte, n)}
}

// Bytes returns the buffer's bytes. They stay valid until Free, or for as
// long as the caller holds the *Buf.
func (b *Buf) Bytes() []byte {
	if b == nil {
		return nil
	}
	return b.b
}

// Free releases the buffer now. Neither it nor any slice of its bytes may
// be used afterwards. Free of a nil *Buf does nothing; a second Free
// does nothing.
func (b *Buf) Free() {
	if b == nil || b.b == nil {
		return
	}
	if b.m != nil {
		b.cleanup.Stop()
		release(mapping{b.m, b.held})
	}
	b.b, b.m = nil, nil
}

// Shrink keeps the buffer's first n bytes and gives the whole pages past
// them back to the OS at once (where it can: Linux); the bytes past n may
// not be used afterwards. It lets a reader keep one block of a larger
// read without a copy: an SSTable's filter, the first of the metadata
// blocks read together (sstable's Reader.load). A heap buffer is only cut
// to n bytes.
func (b *Buf) Shrink(n int) {
	if b == nil || n >= len(b.b) {
		return
	}
	b.b = b.b[:n:n]
	if b.m == nil {
		return
	}
	keep := max((n+pageSize-1)&^(pageSize-1), pageSize)
	if keep >= b.held || !discard(b.m[keep:b.held]) {
		return
	}
	mapped.Add(-int64(b.held - keep))
	b.held = keep
	// The mapping stays whole (it is unmapped whole), its pages past held
	// read as zeros if touched; the cleanup must account for what is left.
	b.cleanup.Stop()
	b.cleanup = runtime.AddCleanup(b, release, mapping{b.m, keep})
}

// Discard gives the whole pages within the buffer's bytes [from, to)
// back to the OS (where it can: Linux), for a reader done with that part
// of a buffer it still holds: the open of an SSTable discards its index
// block as it decodes it. Those bytes may not be used afterwards (they
// read as zeros). Mapped counts them until Shrink or Free.
func (b *Buf) Discard(from, to int) {
	if b == nil || b.m == nil {
		return
	}
	from = (max(from, 0) + pageSize - 1) &^ (pageSize - 1)
	to = min(to, len(b.b)) &^ (pageSize - 1)
	if from < to {
		discard(b.m[from:to])
	}
}

// mapping is a whole mapping as mapAnon returned it, and the bytes of it
// counted in Mapped.
type mapping struct {
	m    []byte
	held int
}

// release unmaps a mapping.
func release(mp mapping) {
	if unmap(mp.m) {
		mapped.Add(-int64(mp.held))
		maps.Add(-1)
	}
}
