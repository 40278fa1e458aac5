package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/golang/snappy"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/offheap"
	"github.com/tabuladb/tabula/vfs"
)

// ReaderOptions configure Open. The zero value means the defaults.
type ReaderOptions struct {
	// Cache holds decompressed data blocks, shared with other Readers.
	// The default is nil: no caching.
	Cache *Cache
	// CacheID identifies the file in the cache; it must be unique per open
	// file (callers pass a process-wide counter). The default is 0: the
	// Reader takes one from a package counter that starts at 1<<63, far
	// from callers' counters.
	CacheID uint64
	// InMemory gives the file's data blocks the cache's in-memory priority
	// (see Cache), for families marked InMemory. The default is false.
	InMemory bool
	// FS holds the file. The default is the local disk (vfs.Default).
	FS vfs.FS
	// Size is the file's size when the caller knows it (a manifest
	// records it), or 0. On an FS that opens a file of known size without
	// looking it up (vfs.SizedFiles: an object store, where that saves a
	// LIST), Open does so, and opens the file again by name if its
	// metadata cannot be read that way.
	Size int64
}

var nextCacheID atomic.Uint64

func init() { nextCacheID.Store(1 << 63) }

// IndexEntry describes one data block, for choosing split keys.
type IndexEntry struct {
	// LastKey is the block's last key.
	LastKey []byte
	// Size is the block's size on disk (with its trailer).
	Size uint64
}

// blockIndex is a file's decoded index: every data block's last key and
// place. Data blocks follow one another from offset 0 (decodeIndex checks
// it), so block i with its trailer spans [offs[i], offs[i+1]); keys holds
// the last keys back to back, key i ending at ends[i]. That is 12 bytes
// an entry beside its key, where a slice and a handle took 40: 2.9 MB of
// a file of 4M keys in 4 KiB blocks, held by every open file
// (docs/BENCHMARKS.md, "Where the memory goes at 4M keys").
//
// The three live in one buffer outside the Go heap (internal/offheap):
// held on the heap, the collector's headroom would double the largest
// memory an open file keeps. mem owns it; the slices are valid while the
// blockIndex (so the Reader, until Close) is held.
type blockIndex struct {
	keys []byte
	ends []uint32
	offs []uint64 // len(ends)+1 when there are blocks
	mem  *offheap.Buf
}

// len returns the number of data blocks.
func (x *blockIndex) len() int { return len(x.ends) }

// lastKey returns block i's last key; callers must not modify it.
func (x *blockIndex) lastKey(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = x.ends[i-1]
	}
	end := x.ends[i]
	return x.keys[start:end:end]
}

// handle returns block i's place in the file.
func (x *blockIndex) handle(i int) blockHandle {
	return blockHandle{offset: x.offs[i], length: x.offs[i+1] - x.offs[i] - trailerLen}
}

// Reader reads one SSTable. Its methods are safe for concurrent use; each
// Iter is used by one goroutine at a time.
type Reader struct {
	path    string
	f       vfs.Readable
	cache   *Cache
	cacheID uint64
	inMem   bool // put blocks in the cache's in-memory list
	index   blockIndex
	filter  filter // nil when the file has none
	props   Properties
	// metaBytes is the memory index, filter and properties hold, set by
	// load (0 while unloaded).
	metaBytes atomic.Int64
	// unloaded: Unload gave the index and filter back; ensure loads them
	// again, under loadMu, before their next use.
	unloaded atomic.Bool
	loadMu   sync.Mutex
	// blockReads counts data blocks read from the file (cache misses).
	blockReads atomic.Int64

	// closed is set by Close, before it drops index and filter: an
	// iterator made afterwards fails with ErrClosed rather than seeing an
	// empty file.
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Open opens the SSTable at path: it reads and checks the footer, index,
// filter and properties. Damage is reported as an error wrapping ErrCorrupt.
func Open(path string, opts ReaderOptions) (*Reader, error) {
	if s, ok := vfs.Or(opts.FS).(vfs.SizedFiles); ok && opts.Size > 0 {
		if f, err := s.OpenSized(path, opts.Size); err == nil {
			if r, err := open(path, f, opts); err == nil {
				return r, nil
			}
		}
		// A size that is not the file's, or a file of several pieces:
		// the file as its listing shows it decides.
	}
	f, err := vfs.Or(opts.FS).Open(path)
	if err != nil {
		return nil, fmt.Errorf("sstable: open: %w", err)
	}
	return open(path, f, opts)
}

// open reads the metadata of the file f at path; it closes f on failure.
func open(path string, f vfs.Readable, opts ReaderOptions) (_ *Reader, err error) {
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	r := &Reader{path: path, f: f, cache: opts.Cache, cacheID: opts.CacheID, inMem: opts.InMemory}
	if r.cacheID == 0 {
		r.cacheID = nextCacheID.Add(1)
	}
	if err := r.load(uint64(f.Size()), false); err != nil {
		return nil, err
	}
	return r, nil
}

// Unload gives the memory of the file's index and filter back (the
// largest part of what an open file holds: megabytes per 4M keys); the
// next use of either (an iterator, a filter probe, IndexEntries,
// ApproximateSize) reads them from the file again. A tablet unloads a
// compaction's outputs as it writes them, so that they are not held
// beside the inputs' until the compaction is published and the inputs are
// closed (docs/BENCHMARKS.md "Compaction outputs cut into files of a
// target size"). It must be called while no other goroutine uses the
// Reader and no iterator of it is open: before the Reader is shared.
func (r *Reader) Unload() {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if r.closed.Load() || r.unloaded.Load() {
		return
	}
	r.index.mem.Free()
	if f, ok := r.filter.(*hashFilter); ok {
		f.mem.Free()
	}
	r.index, r.filter = blockIndex{}, nil
	r.metaBytes.Store(0)
	r.unloaded.Store(true)
}

// ensure loads the index and filter again after Unload. An error (the
// file damaged or gone since it was opened) is returned to the caller
// and the next use tries again.
func (r *Reader) ensure() error {
	if !r.unloaded.Load() {
		return nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if !r.unloaded.Load() {
		return nil
	}
	if r.closed.Load() {
		return ErrClosed
	}
	if err := r.load(r.props.FileSize, true); err != nil {
		r.index, r.filter = blockIndex{}, nil
		return err
	}
	r.unloaded.Store(false)
	return nil
}

// load reads the metadata of a file of the given size; again (ensure)
// leaves the properties as they are, since other goroutines read them.
func (r *Reader) load(size uint64, again bool) error {
	if size < footerLen {
		return corruptf(r.path, kindFooter, 0, "file of %d bytes is shorter than a footer", size)
	}
	footOff := size - footerLen
	// One read of the file's tail: the footer and, when they fit, the
	// metadata blocks before it, which load then reads from it. On an
	// object store each read is a GET: a load of one file costs one
	// instead of four (docs/BENCHMARKS.md "Store requests per tablet
	// load"); metadata larger than the guess costs one more read, of all
	// of it.
	// The tail is scratch, held outside the Go heap and freed when load
	// returns: on the heap it was garbage of up to the metadata's size
	// (megabytes at 4M keys, made while a compaction's inputs and output
	// are all open), which the collector's headroom doubled in the
	// process's peak (docs/BENCHMARKS.md, "The open's tail read off the
	// heap").
	tail := &tailReadable{Readable: r.f, off: size - min(size, max(minTail, size/tailShare), maxTail)}
	tail.mem = offheap.Alloc(int(size - tail.off))
	defer func() { tail.mem.Free() }()
	tail.b = tail.mem.Bytes()
	if err := r.readAt(tail.b, tail.off, kindFooter); err != nil {
		return err
	}
	f := r.f
	r.f = tail
	defer func() { r.f = f }()
	ft, err := decodeFooter(tail.b[footOff-tail.off:])
	if err != nil {
		return corruptf(r.path, kindFooter, footOff, "%v", err)
	}
	// Metadata blocks lie between the data blocks and the footer.
	metaStart := footOff
	check := func(h blockHandle, kind string) error {
		if h.offset > footOff || h.length > footOff-h.offset || trailerLen > footOff-h.offset-h.length {
			return corruptf(r.path, kind, h.offset, "block of %d bytes does not fit a file of %d bytes", h.length, size)
		}
		metaStart = min(metaStart, h.offset)
		return nil
	}
	if err := check(ft.index, kindIndex); err != nil {
		return err
	}
	if err := check(ft.properties, kindProperties); err != nil {
		return err
	}
	hasFilter := ft.filter != (blockHandle{})
	if hasFilter {
		if err := check(ft.filter, kindFilter); err != nil {
			return err
		}
	}

	if metaStart < tail.off {
		// The tail is freed first: up to 4 MiB, the footer decoded, the
		// rest of it read again with all of the metadata.
		// The tail then covers nothing, so that the read goes to the file.
		tail.mem.Free()
		tail.b, tail.off = nil, size
		tail.mem = offheap.Alloc(int(size - metaStart))
		if err := r.readAt(tail.mem.Bytes(), metaStart, kindIndex); err != nil {
			return err
		}
		tail.b, tail.off = tail.mem.Bytes(), metaStart
	}

	b, err := r.readBlock(ft.properties, kindProperties)
	if err != nil {
		return err
	}
	props, err := decodeProperties(b)
	if err != nil {
		return corruptf(r.path, kindProperties, ft.properties.offset, "%v", err)
	}
	if !again {
		r.props = props
		r.props.FileSize = size
	}
	// keepTail: the filter opens the tail and keeps the tail's memory,
	// cut to the filter once the index is decoded (offheap.Buf.Shrink).
	keepTail := false
	if hasFilter {
		// A version 2 filter keeps the buffer it was read into (outside
		// the heap, as the index): the tail itself when the filter starts
		// it (the metadata read whole: the filter is the first metadata
		// block), so that the filter (megabytes at 4M keys) is not
		// copied; otherwise a copy.
		var mem *offheap.Buf
		var b []byte
		if tb, ok := tail.block(ft.filter); ok && ft.filter.offset == tail.off {
			if b, _, err = r.decodeStored(tb, ft.filter, kindFilter); err != nil {
				return err
			}
			mem, keepTail = tail.mem, true
		} else if mem, b, err = r.readMeta(ft.filter, kindFilter); err != nil {
			return err
		}
		if r.filter, err = decodeFilter(b, ft.version); err != nil {
			mem.Free()
			return corruptf(r.path, kindFilter, ft.filter.offset, "%v", err)
		}
		if f, ok := r.filter.(*hashFilter); ok {
			f.mem = mem
		} else if !keepTail {
			mem.Free() // a version 1 filter copied its bits
		} else {
			keepTail = false
		}
	}
	// The index block is decoded into the index's own buffer, from the
	// tail where it lies (no copy of the block: megabytes at 4M keys), or
	// from a copy freed at once.
	// The block's pages are given back as the decoding passes them
	// (offheap.Buf.Discard), so that the block and the index it becomes
	// (both megabytes at 4M keys) are not held at once.
	var mem *offheap.Buf
	if b, ok := tail.block(ft.index); ok {
		if b, _, err = r.decodeStored(b, ft.index, kindIndex); err != nil {
			return err
		}
		start := int(ft.index.offset - tail.off)
		err = r.decodeIndex(b, ft.index.offset, metaStart, func(n int) { tail.mem.Discard(start, start+n) })
	} else {
		if mem, b, err = r.readMeta(ft.index, kindIndex); err != nil {
			return err
		}
		err = r.decodeIndex(b, ft.index.offset, metaStart, func(n int) { mem.Discard(0, n) })
		mem.Free()
	}
	if err != nil {
		return err
	}
	if uint64(r.index.len()) != r.props.NumDataBlocks {
		return corruptf(r.path, kindIndex, ft.index.offset, "%d entries for %d data blocks", r.index.len(), r.props.NumDataBlocks)
	}
	if keepTail {
		tail.mem.Shrink(int(ft.filter.length + trailerLen))
		tail.mem = nil // the filter's now: the deferred Free leaves it
	}
	r.metaBytes.Store(r.metadataBytes())
	return nil
}

// The tail load reads at once: at least minTail bytes, or 1/tailShare of
// the file (an index and filter are about 1-3 % of it with 4 KiB blocks),
// at most maxTail.
const (
	minTail   = 64 << 10
	tailShare = 32
	maxTail   = 4 << 20
)

// tailReadable serves reads within b, the file's bytes from off on, from
// b, and the others from the file: load's reads of the metadata blocks.
type tailReadable struct {
	vfs.Readable
	mem *offheap.Buf // b's memory, freed by load
	b   []byte
	off uint64
}

// block returns the stored bytes of block h with its trailer where they
// lie in b, if they do. They are valid until load frees the tail.
func (t *tailReadable) block(h blockHandle) ([]byte, bool) {
	end := h.offset + h.length + trailerLen
	if h.offset < t.off || end-t.off > uint64(len(t.b)) {
		return nil, false
	}
	return t.b[h.offset-t.off : end-t.off : end-t.off], true
}

func (t *tailReadable) ReadAt(p []byte, off int64) (int, error) {
	if off >= 0 && uint64(off) >= t.off && uint64(off)-t.off+uint64(len(p)) <= uint64(len(t.b)) {
		return copy(p, t.b[uint64(off)-t.off:]), nil
	}
	return t.Readable.ReadAt(p, off)
}

// metadataBytes sums the memory the Reader keeps for its file: the index
// entries and their keys, the filter's bits and the properties' keys.
func (r *Reader) metadataBytes() int64 {
	x := &r.index
	n := int64(unsafe.Sizeof(*r)) + int64(cap(x.keys)) + 4*int64(cap(x.ends)) + 8*int64(cap(x.offs))
	if r.filter != nil {
		n += r.filter.memSize()
	}
	return n + int64(cap(r.props.SmallestKey)+cap(r.props.LargestKey))
}

// MetadataBytes returns the memory the open Reader holds for its file
// outside the block cache: its index (every data block's last key and
// handle), its bloom filter and its properties. They are kept decoded for
// as long as the Reader is open, so that a point read consults the filter
// and the index without a cache lookup; their memory is reported here.
func (r *Reader) MetadataBytes() int64 { return r.metaBytes.Load() }

// decodeIndex decodes the index block and checks that the data blocks
// follow each other from offset 0 up to dataEnd, in increasing key order.
func (r *Reader) decodeIndex(b []byte, off, dataEnd uint64, done func(n int)) error {
	bad := func(format string, args ...any) error {
		return corruptf(r.path, kindIndex, off, format, args...)
	}
	var it blockIter
	if err := it.init(b); err != nil {
		return bad("%v", err)
	}
	// Every key goes into one arena (one allocation per file rather than
	// one per data block). A first pass checks the entries and sizes the
	// arena exactly, the second fills it: grown by appends it would
	// allocate about three times its size while a file of 4M keys opens,
	// live at once with the other files' metadata (docs/BENCHMARKS.md,
	// "Where the memory goes at 4M keys").
	keyBytes, entries := 0, 0
	var prev []byte
	next := uint64(0)
	for ok := it.first(); ok; ok = it.next() {
		h, ok := decodeIndexHandle(it.val)
		if !ok {
			return bad("bad block handle")
		}
		if h.offset != next || h.length > dataEnd-h.offset || trailerLen > dataEnd-h.offset-h.length {
			return bad("data block handle (%d, %d) out of place", h.offset, h.length)
		}
		if entries > 0 && bytes.Compare(prev, it.key) >= 0 {
			return bad("keys out of order")
		}
		prev = append(prev[:0], it.key...)
		keyBytes += len(it.key)
		entries++
		next = h.end()
	}
	if it.err != nil {
		return bad("%v", it.err)
	}
	if next != dataEnd {
		return bad("data blocks end at %d, metadata starts at %d", next, dataEnd)
	}
	if keyBytes > math.MaxUint32 {
		return bad("%d bytes of keys, more than an index holds", keyBytes)
	}
	var x blockIndex
	if entries > 0 {
		x = newBlockIndex(entries, keyBytes)
	}
	passed := 0
	for ok := it.first(); ok; ok = it.next() {
		h, _ := decodeIndexHandle(it.val)
		x.keys = append(x.keys, it.key...)
		x.ends = append(x.ends, uint32(len(x.keys)))
		x.offs = append(x.offs, h.offset)
		// done(n): the block's first n bytes are not read again (the
		// restart array at its end was read by first).
		if it.nextOff-passed >= discardStep {
			passed = it.nextOff
			done(passed)
		}
	}
	if entries > 0 {
		x.offs = append(x.offs, dataEnd)
	}
	r.index = x
	return nil
}

// discardStep is how far decodeIndex's second pass goes between two calls
// of its done function.
const discardStep = 256 << 10

// newBlockIndex returns an empty index with room for its entries and
// their keys in one buffer: the block offsets first (8-byte aligned at
// the buffer's start), then the key ends, then the keys.
func newBlockIndex(entries, keyBytes int) blockIndex {
	offsLen, endsLen := 8*(entries+1), 4*entries
	mem := offheap.Alloc(offsLen + endsLen + keyBytes)
	b := mem.Bytes()
	return blockIndex{
		offs: unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), entries+1)[:0],
		ends: unsafe.Slice((*uint32)(unsafe.Pointer(&b[offsLen])), entries)[:0],
		keys: b[offsLen+endsLen : offsLen+endsLen : offsLen+endsLen+keyBytes],
		mem:  mem,
	}
}

// decodeIndexHandle decodes an index entry's value: the data block's
// offset and length, two uvarints and nothing after them.
func decodeIndexHandle(v []byte) (blockHandle, bool) {
	o, n1 := binary.Uvarint(v)
	if n1 <= 0 {
		return blockHandle{}, false
	}
	l, n2 := binary.Uvarint(v[n1:])
	if n2 <= 0 || n1+n2 != len(v) {
		return blockHandle{}, false
	}
	return blockHandle{offset: o, length: l}, true
}

// readAt fills buf from off; a short read means the file is damaged.
func (r *Reader) readAt(buf []byte, off uint64, kind string) error {
	n, err := r.f.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return corruptf(r.path, kind, off, "short read of %d of %d bytes", n, len(buf))
	}
	return fmt.Errorf("sstable: read %s: %s block at offset %d: %w", r.path, kind, off, err)
}

// readBlock reads and checks metadata block h (never compressed) into
// memory of its own, which callers keep.
func (r *Reader) readBlock(h blockHandle, kind string) ([]byte, error) {
	if h.length > maxBlockSize {
		return nil, corruptf(r.path, kind, h.offset, "block of %d bytes is too large", h.length)
	}
	b, _, err := r.decodeBlock(allocBlock(int(h.length+trailerLen)), h, kind)
	return b, err
}

// readData reads, checks and decodes data block h into a block of its
// own, with one reference for the caller. The stored bytes are read into
// a pooled block, which becomes the block itself when it is stored
// uncompressed.
func (r *Reader) readData(h blockHandle) (*blockBuf, error) {
	if h.length > maxBlockSize {
		return nil, corruptf(r.path, kindData, h.offset, "block of %d bytes is too large", h.length)
	}
	raw := newBlockBuf(int(h.length + trailerLen))
	if err := r.readAt(raw.data, h.offset, kindData); err != nil {
		raw.drop(false)
		return nil, err
	}
	b, err := r.decodeData(raw.data, h, raw)
	if b != raw {
		raw.drop(false) // scratch: the block was decoded out of it
	}
	return b, err
}

// decodeData checks data block h's stored bytes buf (with its trailer)
// and decodes them into a block of its own, with one reference for the
// caller. raw, if not nil, is the caller's block holding buf: a block
// stored uncompressed is then raw itself, its data cut to the block.
func (r *Reader) decodeData(buf []byte, h blockHandle, raw *blockBuf) (*blockBuf, error) {
	stored, typ, err := checkTrailer(buf)
	if err != nil {
		return nil, corruptf(r.path, kindData, h.offset, "%v", err)
	}
	switch typ {
	case blockTypeNone:
		if raw != nil {
			raw.data = stored
			return raw, nil
		}
		b := newBlockBuf(len(stored))
		copy(b.data, stored)
		return b, nil
	case blockTypeSnappy:
		n, err := snappy.DecodedLen(stored)
		if err == nil && n > maxBlockSize {
			err = errBlockTooLarge
		}
		if err != nil {
			return nil, corruptf(r.path, kindData, h.offset, "decompress (type %d): %v", typ, err)
		}
		b := newBlockBuf(n)
		d, err := snappy.Decode(b.data, stored)
		if err != nil {
			b.release() // its data untouched: it goes back to its pool whole
			return nil, corruptf(r.path, kindData, h.offset, "decompress (type %d): %v", typ, err)
		}
		b.data = d // b.data itself: it has the decoded length
		return b, nil
	}
	d, err := decompressBlock(typ, stored)
	if err != nil {
		return nil, corruptf(r.path, kindData, h.offset, "decompress (type %d): %v", typ, err)
	}
	return ownBlockBuf(d), nil
}

// readMeta reads metadata block h (never compressed) into a buffer of its
// own; the block is a slice of the buffer's bytes.
func (r *Reader) readMeta(h blockHandle, kind string) (*offheap.Buf, []byte, error) {
	if h.length > maxBlockSize {
		return nil, nil, corruptf(r.path, kind, h.offset, "block of %d bytes is too large", h.length)
	}
	mem := offheap.Alloc(int(h.length + trailerLen))
	b, _, err := r.decodeBlock(mem.Bytes(), h, kind)
	if err != nil {
		mem.Free()
		return nil, nil, err
	}
	return mem, b, nil
}

// decodeBlock reads a block into buf, checks and decompresses it. When the
// block is not compressed, the result is buf's storage.
func (r *Reader) decodeBlock(buf []byte, h blockHandle, kind string) ([]byte, byte, error) {
	if err := r.readAt(buf, h.offset, kind); err != nil {
		return nil, 0, err
	}
	return r.decodeStored(buf, h, kind)
}

// decodeStored checks metadata block h's stored bytes buf (with its
// trailer), which must not be compressed, and returns the block, buf's
// storage.
func (r *Reader) decodeStored(buf []byte, h blockHandle, kind string) ([]byte, byte, error) {
	stored, typ, err := checkTrailer(buf)
	if err != nil {
		return nil, 0, corruptf(r.path, kind, h.offset, "%v", err)
	}
	if typ != blockTypeNone {
		return nil, 0, corruptf(r.path, kind, h.offset, "compressed metadata block")
	}
	return stored, typ, nil
}

// dataBlock returns decoded data block i with a reference for the caller,
// through the cache; a block read from the file is added to the cache
// when fill is set.
func (r *Reader) dataBlock(i int, fill bool) (*blockBuf, error) {
	return r.dataBlockAhead(i, fill, nil, nil)
}

// dataBlockAhead is dataBlock for a forward iterator with window ra (nil:
// none) and upper bound upper: a block the cache misses comes from the
// window, which is refilled when the iterator reads in order (see
// readahead.go).
func (r *Reader) dataBlockAhead(i int, fill bool, ra *readahead, upper []byte) (*blockBuf, error) {
	h := r.index.handle(i)
	ahead := ra != nil && ra.loaded(i)
	if r.cache != nil {
		if b := r.cache.get(r.cacheID, h.offset); b != nil {
			return b, nil
		}
	}
	r.blockReads.Add(1)
	var b *blockBuf
	var err error
	if buf, ok := ra.storedOrFill(r, i, ahead, upper); ok {
		// The window is reused: the block is decoded (or copied) into
		// memory of its own.
		b, err = r.decodeData(buf, h, nil)
	} else {
		b, err = r.readData(h)
	}
	if err != nil {
		return nil, err
	}
	if r.cache != nil && fill {
		r.cache.put(r.cacheID, h.offset, b, r.inMem)
	}
	return b, nil
}

// Path returns the file's path.
func (r *Reader) Path() string { return r.path }

// Properties returns the file's properties; callers must not modify them.
func (r *Reader) Properties() *Properties { return &r.props }

// MayContainRow reports whether the file may hold entries of the row whose
// cell.EncodeRow encoding is given. It is true when there is no filter.
func (r *Reader) MayContainRow(encodedRow []byte) bool {
	if r.props.NumEntries == 0 {
		return false
	}
	if r.ensure() != nil {
		return true // the read that follows reports the error
	}
	return r.filter == nil || r.filter.mayContain(encodedRow)
}

// MayContainColumn reports whether the file may hold entries of the column
// whose cell.EncodeColumn encoding is given. A row+column filter answers for
// the column; a row filter answers for its row; without a filter it is true.
// Family tombstones belong to the row, not to a column: a reader of a
// column must ask MayContainRow to find those.
func (r *Reader) MayContainColumn(encodedColumn []byte) bool {
	if r.props.NumEntries == 0 {
		return false
	}
	if r.ensure() != nil || r.filter == nil {
		return true
	}
	if r.props.Bloom == families.BloomRowColumn {
		return r.filter.mayContain(encodedColumn)
	}
	row, err := cell.RowPrefix(encodedColumn)
	if err != nil {
		return true
	}
	return r.filter.mayContain(row)
}

// blocksFor returns the range [lo, hi) of data blocks that may hold keys in
// [lower, upper); none when the index cannot be loaded again (see Unload).
func (r *Reader) blocksFor(lower, upper []byte) (lo, hi int) {
	if r.ensure() != nil {
		return 0, 0
	}
	n := r.index.len()
	if lower != nil {
		lo = sort.Search(n, func(i int) bool { return bytes.Compare(r.index.lastKey(i), lower) >= 0 })
	}
	hi = n
	if upper != nil {
		// Block i holds keys > lastKey[i-1]; it may hold keys < upper only
		// when lastKey[i-1] < upper.
		hi = sort.Search(n, func(i int) bool {
			return i > 0 && bytes.Compare(r.index.lastKey(i-1), upper) >= 0
		})
		if len(r.props.SmallestKey) > 0 && n > 0 && bytes.Compare(r.props.SmallestKey, upper) >= 0 {
			hi = 0
		}
	}
	return lo, max(lo, hi)
}

// IndexEntries describes the data blocks that may hold keys in
// [lower, upper); nil bounds are unbounded.
func (r *Reader) IndexEntries(lower, upper []byte) []IndexEntry {
	lo, hi := r.blocksFor(lower, upper)
	out := make([]IndexEntry, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, IndexEntry{LastKey: bytes.Clone(r.index.lastKey(i)), Size: r.index.handle(i).length + trailerLen})
	}
	return out
}

// VisitIndex calls fn, in key order, with what IndexEntries returns for
// each data block that may hold keys in [lower, upper), without copying
// the keys: lastKey is valid only during the call (it lies in the index's
// memory). For a caller that keeps a part of each key or none, such as
// the tablet's sampling, which keeps each block's row.
func (r *Reader) VisitIndex(lower, upper []byte, fn func(lastKey []byte, size uint64)) {
	lo, hi := r.blocksFor(lower, upper)
	for i := lo; i < hi; i++ {
		fn(r.index.lastKey(i), r.index.handle(i).length+trailerLen)
	}
}

// ApproximateSize sums the on-disk sizes of the data blocks that may hold
// keys in [lower, upper).
func (r *Reader) ApproximateSize(lower, upper []byte) uint64 {
	lo, hi := r.blocksFor(lower, upper)
	var s uint64
	for i := lo; i < hi; i++ {
		s += r.index.handle(i).length + trailerLen
	}
	return s
}

// Close closes the file and frees the index and filter (MetadataBytes
// still reports what they were). Iterators must be closed first, and no
// other call may be in flight (a filter probe would read freed memory); an
// iterator made after Close fails with ErrClosed, and MayContainRow and
// MayContainColumn answer true. Calling it again returns the same result.
//
// Dropping them matters when something keeps the closed Reader: a slice
// of files filtered in place keeps the dropped ones past its length, and
// the inputs of a major compaction at 4M keys held 13 MB of index and
// filter that way, live for as long as the tablet's current version
// (docs/BENCHMARKS.md, "Where the memory goes at 4M keys").
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.loadMu.Lock()
		defer r.loadMu.Unlock()
		r.closed.Store(true)
		r.closeErr = r.f.Close()
		// Their memory goes back now, not when a collection finds the
		// Reader unreachable: the inputs of a compaction are closed as
		// it is published, and the reads that follow load its outputs'
		// (docs/BENCHMARKS.md "Compaction outputs cut into files of a
		// target size"). No iterator is open (see above).
		r.index.mem.Free()
		if f, ok := r.filter.(*hashFilter); ok {
			f.mem.Free()
		}
		r.index = blockIndex{}
		r.filter = nil
	})
	return r.closeErr
}
