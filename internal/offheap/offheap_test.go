package offheap

import (
	"runtime"
	"testing"
	"time"
)

func TestSmallBuffersAreHeapSlices(t *testing.T) {
	b := Alloc(100)
	if len(b.Bytes()) != 100 || b.m != nil {
		t.Fatalf("Alloc(100): len %d, mapped %v; want a heap slice of 100 bytes", len(b.Bytes()), b.m != nil)
	}
	b.Free()
	b.Free()
	if b.Bytes() != nil {
		t.Fatal("Bytes after Free is not nil")
	}
}

func TestLargeBufferIsMappedZeroedAndFreed(t *testing.T) {
	before := Mapped()
	b := Alloc(MinSize + 1)
	if b.m == nil {
		t.Skip("no anonymous memory maps here")
	}
	bs := b.Bytes()
	if len(bs) != MinSize+1 || cap(bs) != MinSize+1 {
		t.Fatalf("len %d cap %d, want %d", len(bs), cap(bs), MinSize+1)
	}
	for i, c := range bs {
		if c != 0 {
			t.Fatalf("byte %d is %d, want zero", i, c)
		}
	}
	bs[0], bs[len(bs)-1] = 1, 2
	if got, want := Mapped()-before, int64(MinSize+pageSize); got != want {
		t.Fatalf("Mapped grew by %d, want %d (whole pages)", got, want)
	}
	b.Free()
	if got := Mapped() - before; got != 0 {
		t.Fatalf("Mapped is %d above the start after Free, want 0", got)
	}
	b.Free() // a second Free does nothing
}

// An unreachable buffer that was never freed is unmapped by its cleanup.
func TestUnreachableBufferIsReleased(t *testing.T) {
	before := Mapped()
	b := Alloc(1 << 20)
	if b.m == nil {
		t.Skip("no anonymous memory maps here")
	}
	b.Bytes()[12345] = 7
	b = nil
	_ = b
	if !releasedTo(before) {
		t.Fatalf("Mapped is %d above the start after the buffer became unreachable, want 0", Mapped()-before)
	}
}

// Past MaxMaps live mappings, buffers come from the heap.
func TestMapsAreBounded(t *testing.T) {
	var bufs []*Buf
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for range MaxMaps {
		b := Alloc(MinSize)
		if b.m == nil {
			t.Skip("no anonymous memory maps here, or others hold them")
		}
		bufs = append(bufs, b)
	}
	extra := Alloc(MinSize)
	if extra.m != nil {
		t.Fatalf("buffer %d is mapped, want a heap buffer past MaxMaps", MaxMaps+1)
	}
	bufs[0].Free()
	again := Alloc(MinSize)
	defer again.Free()
	if again.m == nil {
		t.Fatal("a buffer after a Free below MaxMaps is not mapped")
	}
}

// Shrink keeps the buffer's first bytes and gives back the pages past
// them; Free, or the cleanup of an unreachable buffer, then unmaps only
// what is left (what Shrink gave back may be mapped again by anyone).
func TestShrinkKeepsThePrefixAndGivesBackTheRest(t *testing.T) {
	for _, free := range []bool{true, false} {
		before := Mapped()
		b := Alloc(1 << 20)
		if b.m == nil {
			t.Skip("no anonymous memory maps here")
		}
		bs := b.Bytes()
		for i := range 5000 {
			bs[i] = byte(i)
		}
		b.Shrink(5000)
		if got := b.Bytes(); len(got) != 5000 || cap(got) != 5000 {
			t.Fatalf("after Shrink(5000): len %d cap %d", len(got), cap(got))
		}
		for i, c := range b.Bytes() {
			if c != byte(i) {
				t.Fatalf("byte %d is %d after Shrink, want %d", i, c, byte(i))
			}
		}
		if got, want := Mapped()-before, int64(2*pageSize); got != want {
			t.Fatalf("Mapped is %d above the start after Shrink(5000), want %d (two pages)", got, want)
		}
		b.Shrink(6000) // no larger: nothing changes
		if len(b.Bytes()) != 5000 {
			t.Fatalf("Shrink to more bytes changed the length to %d", len(b.Bytes()))
		}
		if free {
			b.Free()
		} else {
			b = nil
			releasedTo(before)
		}
		if got := Mapped() - before; got != 0 {
			t.Fatalf("Mapped is %d above the start after the shrunk buffer's release (Free %v), want 0", got, free)
		}
	}
}

// Discard gives back only the whole pages within its range: the bytes
// around them keep their values. (On Linux the pages given back read as
// zeros.)
func TestDiscardKeepsTheBytesAroundItsPages(t *testing.T) {
	b := Alloc(8 * pageSize)
	if b.m == nil {
		t.Skip("no anonymous memory maps here")
	}
	defer b.Free()
	bs := b.Bytes()
	for i := range bs {
		bs[i] = 1
	}
	b.Discard(pageSize+10, 4*pageSize+10) // pages 2 and 3 only
	for i, c := range bs {
		inside := i >= 2*pageSize && i < 4*pageSize
		if !inside && c != 1 {
			t.Fatalf("byte %d outside the discarded pages is %d, want 1", i, c)
		}
		if inside && runtime.GOOS == "linux" && c != 0 {
			t.Fatalf("byte %d of a discarded page is %d, want 0", i, c)
		}
	}
}

// releasedTo reports whether Mapped comes back to before once unreachable
// buffers are collected. Cleanups run on their own goroutine after the
// collection that finds a buffer unreachable: it waits for them,
// collecting each round (a bounded number of rounds, not a time).
func releasedTo(before int64) bool {
	for range 1000 {
		runtime.GC()
		if Mapped() == before {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
