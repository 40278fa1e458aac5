package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// WriterOptions configure a Writer. The zero value means the defaults.
type WriterOptions struct {
	// Compression compresses data blocks; a block that would not shrink by
	// at least 12.5% is stored uncompressed. The default is none.
	Compression families.Compression
	// Bloom selects the filter's entries: BloomRow adds the row prefix
	// (cell.RowPrefix) of every key, BloomRowColumn adds the row prefix and
	// the column prefix (cell.ColumnPrefix) of every key. The default is
	// none (no filter).
	Bloom families.Bloom
	// BloomFalsePositive is the filter's target false-positive rate, in
	// (0, 1). The default is 0.01.
	BloomFalsePositive float64
	// BlockSize is the target uncompressed size of a data block; a block is
	// cut after the entry that reaches it. The default is 8 KiB: a point
	// read that misses the block cache reads and decompresses one block, a
	// scan pays a fixed cost per block, and 8 KiB was the measured balance
	// (BenchmarkBlockSize).
	BlockSize int
	// RestartInterval is the number of keys between restart points of a
	// block. The default is 16.
	RestartInterval int
	// MaxEntries, when not 0, bounds from above the entries the file will
	// get (a flush knows its memtable's, a compaction its inputs'). It
	// lets a large file's bloom filter be built in place instead of from
	// a hash kept per row (see filterBuilder); a wrong bound costs filter
	// size or false positives, never a wrong answer. The default is 0:
	// unknown.
	MaxEntries uint64
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.BloomFalsePositive <= 0 || o.BloomFalsePositive >= 1 {
		o.BloomFalsePositive = 0.01
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 8 << 10
	}
	if o.RestartInterval <= 0 {
		o.RestartInterval = 16
	}
	return o
}

// Writer writes one SSTable from keys added in strictly increasing order.
// It is not safe for concurrent use. Finish with Close, or Abort and
// remove the file.
type Writer struct {
	f        vfs.Writable
	bw       *bufio.Writer
	opts     WriterOptions
	offset   uint64
	data     blockWriter
	index    blockWriter
	filter   *filterBuilder
	props    Properties
	scratch  []byte
	trailer  [trailerLen]byte // writeBlock's, here so that it stays off the heap
	err      error            // sticky: the first write failure
	closed   bool
	closeErr error
	// held is what MemoryBytes reports, refreshed once per data block.
	held atomic.Int64
}

// NewWriter returns a Writer that writes to f (a new file, from
// vfs.FS.Create) through a buffer. The Writer owns f from now on: Close and
// Abort close it.
func NewWriter(f vfs.Writable, opts WriterOptions) *Writer {
	opts = opts.withDefaults()
	w := &Writer{
		f:     f,
		bw:    bufio.NewWriterSize(&writeback{f: f}, 256<<10),
		opts:  opts,
		data:  blockWriter{interval: opts.RestartInterval},
		index: blockWriter{interval: opts.RestartInterval, offheap: true},
	}
	w.props.Compression = opts.Compression
	w.props.Bloom = opts.Bloom
	if opts.Bloom != families.BloomNone {
		w.filter = &filterBuilder{fp: opts.BloomFalsePositive}
		// A row+column filter gets up to two entries per key.
		if e := opts.MaxEntries; e > 0 && e <= math.MaxInt32 {
			if opts.Bloom == families.BloomRowColumn {
				e *= 2
			}
			w.filter.expected = int(e)
		}
	}
	switch {
	case opts.Compression > families.CompressionZstd:
		w.err = fmt.Errorf("sstable: unknown compression %v", opts.Compression)
	case opts.Bloom > families.BloomRowColumn:
		w.err = fmt.Errorf("sstable: unknown bloom setting %v", opts.Bloom)
	}
	return w
}

// Add appends an entry. key must be greater than the previous key
// (bytes.Compare); the Writer copies what it keeps.
func (w *Writer) Add(key, value []byte) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if w.props.NumEntries > 0 && bytes.Compare(key, w.props.LargestKey) <= 0 {
		return fmt.Errorf("%w: %q after %q", ErrKeyOrder, key, w.props.LargestKey)
	}
	if uint64(len(key))+uint64(len(value)) > maxEntrySize {
		return fmt.Errorf("%w: %d bytes of key and value", ErrTooLarge, len(key)+len(value))
	}
	w.props.observe(key, value)
	w.props.LargestKey = append(w.props.LargestKey[:0], key...)
	if w.filter != nil {
		w.addToFilter(key)
	}
	// An entry as large as a block gets a block of its own: mixed into a
	// block of small entries it would make every seek to them read and
	// decompress it again.
	if len(key)+len(value) >= w.opts.BlockSize && w.data.entries > 0 {
		if err := w.flushDataBlock(); err != nil {
			return err
		}
	}
	w.data.add(key, value)
	if w.data.estimatedSize() >= w.opts.BlockSize {
		return w.flushDataBlock()
	}
	return nil
}

// addToFilter adds the key's prefixes; keys that are not cell keys add nothing.
func (w *Writer) addToFilter(key []byte) {
	if w.opts.Bloom == families.BloomRowColumn {
		col, ok, err := cell.ColumnPrefix(key)
		if err != nil {
			return
		}
		if ok {
			w.filter.addColumn(col)
		}
	}
	if row, err := cell.RowPrefix(key); err == nil {
		w.filter.addRow(row)
	}
}

// LastKey returns the last key added (nil before the first); it is valid
// until the next Add and must not be modified.
func (w *Writer) LastKey() []byte {
	if w.props.NumEntries == 0 {
		return nil
	}
	return w.props.LargestKey
}

// EstimatedSize returns the bytes written so far plus the pending block.
func (w *Writer) EstimatedSize() uint64 {
	if w.data.entries == 0 {
		return w.offset
	}
	return w.offset + uint64(w.data.estimatedSize()) + trailerLen
}

func (w *Writer) flushDataBlock() error {
	h, err := w.writeBlock(w.data.finish(), w.opts.Compression)
	if err != nil {
		return err
	}
	w.scratch = binary.AppendUvarint(w.scratch[:0], h.offset)
	w.scratch = binary.AppendUvarint(w.scratch, h.length)
	w.index.add(w.data.lastKey, w.scratch)
	w.props.NumDataBlocks++
	w.props.DataSize += h.length + trailerLen
	w.data.reset()
	w.held.Store(w.heldBytes())
	return nil
}

// MemoryBytes returns the memory the writer holds until it is closed: its
// output buffer, block and index buffers and bloom filter builder (hashes
// or bits). It is refreshed once per data block and is safe to call while
// another goroutine writes, so that a tablet can report what its flushes
// and compactions hold.
func (w *Writer) MemoryBytes() int64 { return w.held.Load() }

// heldBytes sums the capacities of what the writer holds.
func (w *Writer) heldBytes() int64 {
	n := int64(w.bw.Size() + cap(w.data.buf) + cap(w.index.buf) + cap(w.scratch))
	n += 4 * int64(cap(w.data.restarts)+cap(w.index.restarts))
	if f := w.filter; f != nil {
		n += int64(cap(f.block))
		for _, c := range f.chunks {
			n += 8 * int64(cap(c))
		}
	}
	return n
}

// writeBlock compresses and writes a block with its trailer.
func (w *Writer) writeBlock(raw []byte, c families.Compression) (blockHandle, error) {
	stored, typ, err := compressBlock(c, raw, w.scratch)
	if err != nil {
		w.err = err
		return blockHandle{}, err
	}
	if typ != blockTypeNone {
		w.scratch = stored[:0]
	}
	putTrailer(w.trailer[:], stored, typ)
	h := blockHandle{offset: w.offset, length: uint64(len(stored))}
	if _, err := w.bw.Write(stored); err != nil {
		w.err = err
		return h, err
	}
	if _, err := w.bw.Write(w.trailer[:]); err != nil {
		w.err = err
		return h, err
	}
	w.offset = h.end()
	return h, nil
}

// Close finishes the file (last data block, filter, properties, index,
// footer), syncs it and closes it. Calling it again returns the same result.
func (w *Writer) Close() error {
	if w.closed {
		return w.closeErr
	}
	w.closed = true
	err := w.finish()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.closeErr = err
	w.release()
	return err
}

// release drops the buffers of a closed writer. Its owner often keeps it
// for a while (the tablet reads its properties and opens the new file
// while the writer is still listed among those in flight): a compaction's
// index block alone is megabytes at 4M keys, live for nothing while the
// new file's reader loads its own index and filter.
func (w *Writer) release() {
	w.bw = nil
	w.data = blockWriter{}
	w.index.free()
	w.index = blockWriter{}
	w.scratch = nil
	w.filter.free()
	w.filter = nil
	w.held.Store(0)
}

func (w *Writer) finish() error {
	if w.err != nil {
		return w.err
	}
	if w.data.entries > 0 {
		if err := w.flushDataBlock(); err != nil {
			return err
		}
	}
	var ft footer
	ft.version = formatVersion
	if w.filter != nil {
		h, err := w.writeBlock(w.filter.build(w.opts.BloomFalsePositive), families.CompressionNone)
		if err != nil {
			return err
		}
		ft.filter = h
		w.filter.free()
		w.filter = nil
	}
	h, err := w.writeBlock(w.props.encode(), families.CompressionNone)
	if err != nil {
		return err
	}
	ft.properties = h
	if ft.index, err = w.writeBlock(w.index.finish(), families.CompressionNone); err != nil {
		return err
	}
	if _, err := w.bw.Write(ft.encode()); err != nil {
		return err
	}
	w.offset += footerLen
	if err := w.bw.Flush(); err != nil {
		return err
	}
	w.props.FileSize = w.offset
	return w.f.Sync()
}

// Abort closes the file without finishing it; the caller removes it.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.closeErr = ErrClosed
	_ = w.f.Close()
	w.release()
}

// Properties returns the file's properties; they are complete after a
// successful Close.
func (w *Writer) Properties() Properties {
	p := w.props
	p.SmallestKey = append([]byte(nil), p.SmallestKey...)
	p.LargestKey = append([]byte(nil), p.LargestKey...)
	if p.NumEntries == 0 {
		p.SmallestKey, p.LargestKey = nil, nil
	}
	return p
}
