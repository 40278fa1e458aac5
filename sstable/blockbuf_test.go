package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/families"
)

// TestPinsRecycleBlocks: an iterator given pins hands each block it leaves
// to them, and releasing them recycles the blocks (the entries read stay
// right); an iterator without pins recycles nothing, so values it
// returned stay valid for good. With a cache, a block is recycled only
// once the cache has let it go too. In race builds a recycled block is
// poisoned: a value kept past its release shows it.
func TestPinsRecycleBlocks(t *testing.T) {
	rng := testRand(t)
	entries := randomEntries(rng, 3000, 100)
	for _, comp := range []families.Compression{families.CompressionNone, families.CompressionSnappy} {
		path, _ := writeTable(t, t.TempDir(), WriterOptions{Compression: comp, BlockSize: 1024}, entries)
		for _, cached := range []bool{false, true} {
			t.Run(fmt.Sprintf("compression=%v/cache=%v", comp, cached), func(t *testing.T) {
				var c *Cache
				if cached {
					c = NewCache(64 << 10) // a fraction of the file
				}
				r := openTable(t, path, ReaderOptions{Cache: c})
				blocks := r.index.len()
				if blocks < 50 {
					t.Fatalf("%d blocks: too few for the test", blocks)
				}

				// Without pins: nothing recycled; every value returned
				// is intact after the scan.
				before := RecycledBlocks()
				it := r.NewIter(nil, nil)
				var kept [][]byte
				for ok := it.First(); ok; ok = it.Next() {
					kept = append(kept, it.Value())
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if n := RecycledBlocks() - before; n != 0 && !cached {
					t.Fatalf("a scan without pins recycled %d blocks", n)
				}

				// With pins, released after every entry (as a scan that
				// reuses its cells does after each row).
				var pins Pins
				before = RecycledBlocks()
				it = r.NewIter(nil, nil)
				it.SetPins(&pins)
				var got []kv
				for ok := it.First(); ok; ok = it.Next() {
					got = append(got, kv{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
					pins.Release()
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				pins.Release()
				sameEntries(t, "scan with pins", got, entries)
				recycled := RecycledBlocks() - before
				if !cached && recycled < uint64(blocks) {
					t.Fatalf("a scan with pins over %d blocks recycled %d", blocks, recycled)
				}
				if cached && recycled == 0 {
					t.Fatalf("a scan with pins over %d blocks through a cache of a fraction of them recycled none", blocks)
				}
				for i, v := range kept {
					if !bytes.Equal(v, entries[i].value) {
						t.Fatalf("value %d read without pins changed after blocks were recycled", i)
					}
				}
			})
		}
	}
}

// TestReleasedBlockIsPoisoned: in race builds a value used after its
// block was released reads poison, which is what lets the model tests
// catch a missed pin.
func TestReleasedBlockIsPoisoned(t *testing.T) {
	if !poisonReleased {
		t.Skip("blocks are poisoned in race builds only")
	}
	rng := testRand(t)
	entries := randomEntries(rng, 200, 100)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 1024}, entries)
	r := openTable(t, path, ReaderOptions{})
	var pins Pins
	it := r.NewIter(nil, nil)
	it.SetPins(&pins)
	ok := it.First()
	for ok && len(it.Value()) == 0 { // tombstones have no value
		ok = it.Next()
	}
	if !ok {
		t.Fatal("no entry with a value", it.Err())
	}
	v := it.Value()
	want := bytes.Clone(v)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v, want) {
		t.Fatal("the value changed before its block was released")
	}
	pins.Release()
	if !bytes.Equal(v, bytes.Repeat([]byte{poisonByte}, len(v))) {
		t.Fatalf("a value of a released block reads %x, not poison", v)
	}
}

// TestBlockReleasedTooOftenPanics: a holder counting error is a bug that
// would recycle memory still in use; it must not go unnoticed.
func TestBlockReleasedTooOftenPanics(t *testing.T) {
	b := newBlockBuf(100)
	b.release()
	defer func() {
		if recover() == nil {
			t.Fatal("a second release did not panic")
		}
	}()
	b.release()
}

// TestNewBlockBufCapacityIsItsSizeClass: a block's capacity is the memory
// the allocator gives it, which is what the cache charges.
func TestNewBlockBufCapacityIsItsSizeClass(t *testing.T) {
	for _, n := range []int{1, 100, 4096, 4097, 5000, 32768, 40000, maxPooledBlock, maxPooledBlock + 1, 1 << 20} {
		b := newBlockBuf(n)
		if len(b.data) != n || cap(b.data) != cap(allocBlock(n)) {
			t.Errorf("newBlockBuf(%d): len %d cap %d, want cap %d", n, len(b.data), cap(b.data), cap(allocBlock(n)))
		}
		if (b.class >= 0) != (n <= maxPooledBlock) {
			t.Errorf("newBlockBuf(%d): class %d", n, b.class)
		}
		b.release()
	}
}

// TestBadSnappyBlockGivesItsMemoryBackWhole: a block whose checksum holds
// but whose snappy data does not decode is a corruption error, and the
// memory taken for it goes back to its pool whole, so the next block of
// its size class can use it.
func TestBadSnappyBlockGivesItsMemoryBackWhole(t *testing.T) {
	path, _ := writeTable(t, t.TempDir(), WriterOptions{}, randomEntries(testRand(t), 10, 10))
	r := openTable(t, path, ReaderOptions{})
	// A snappy stream claiming 3000 decoded bytes (varint b8 17), then
	// a literal tag promising more bytes than follow.
	stored := []byte{0xb8, 0x17, 0xf0, 0xff, 0x01}
	buf := append(stored, make([]byte, trailerLen)...)
	putTrailer(buf[len(stored):], stored, blockTypeSnappy)
	for range 100 {
		if _, err := r.decodeData(buf, blockHandle{}, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bad snappy block: %v, want ErrCorrupt", err)
		}
		b := newBlockBuf(3000)
		if len(b.data) != 3000 {
			t.Fatalf("a block after the bad one has %d bytes", len(b.data))
		}
		b.release()
	}
}
