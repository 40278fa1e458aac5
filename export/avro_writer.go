package export

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/golang/snappy"
)

// avroBlockBytes bounds the encoded rows an Avro writer buffers before it
// compresses them into one block: a writer holds about this much plus one
// row (and a row larger than it makes a block of its own). Avro's Java
// writer cuts at 64 kB; larger blocks compress better with Snappy, and a
// block is what a splitting reader (Spark, Beam) reads at once.
const avroBlockBytes = 1 << 20

// avroMagic opens every Avro object container file.
var avroMagic = [4]byte{'O', 'b', 'j', 1}

// The Avro writer and reader are written for the one schema they carry
// rather than through a generic Avro library: the encoding of BigtableRow is
// four kinds of field, and a reader of files from elsewhere must bound what
// it allocates by what the file holds (a generic decoder allocates the block
// sizes a file claims). github.com/hamba/avro/v2 is the tests' independent
// writer and reader of the same files.
type avroWriter struct {
	w      io.Writer
	sync   [16]byte
	block  []byte // the encoded rows of the block being filled
	count  int64  // rows in block
	out    []byte // scratch: block header, compressed data, checksum
	err    error
	closed bool
}

// NewAvroWriter returns a writer of one Avro object container file of
// BigtableRow records (the Dataflow templates' schema, bigtableRowSchema),
// Snappy-compressed, with o.Header (if any) in the file metadata under
// HeaderMetadataKey. The header is written at once; rows follow in blocks.
func NewAvroWriter(w io.Writer, o FileOptions) (RowWriter, error) {
	a := &avroWriter{w: w}
	if _, err := rand.Read(a.sync[:]); err != nil {
		return nil, fmt.Errorf("export: avro sync marker: %w", err)
	}
	h := append([]byte(nil), avroMagic[:]...)
	meta := [][2][]byte{
		{[]byte("avro.schema"), []byte(bigtableRowSchema)},
		{[]byte("avro.codec"), []byte("snappy")},
	}
	if o.Header != nil {
		meta = append(meta, [2][]byte{[]byte(HeaderMetadataKey), o.Header})
	}
	h = appendLong(h, int64(len(meta)))
	for _, kv := range meta {
		h = appendBytes(h, kv[0])
		h = appendBytes(h, kv[1])
	}
	h = appendLong(h, 0)
	h = append(h, a.sync[:]...)
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("export: avro header: %w", err)
	}
	return a, nil
}

// appendLong appends v in Avro's zig-zag varint encoding.
func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func appendBytes(b, v []byte) []byte {
	return append(appendLong(b, int64(len(v))), v...)
}

func (a *avroWriter) WriteRow(r Row) error {
	if a.err != nil {
		return a.err
	}
	if a.closed {
		return errors.New("export: avro: WriteRow after Close")
	}
	a.block = appendBytes(a.block, r.Key)
	if len(r.Cells) > 0 {
		// The whole array as one block of items, then the empty block that
		// ends it.
		a.block = appendLong(a.block, int64(len(r.Cells)))
		for _, c := range r.Cells {
			a.block = appendLong(a.block, int64(len(c.Family)))
			a.block = append(a.block, c.Family...)
			a.block = appendBytes(a.block, c.Qualifier)
			a.block = appendLong(a.block, c.Timestamp)
			a.block = appendBytes(a.block, c.Value)
		}
	}
	a.block = appendLong(a.block, 0)
	a.count++
	if len(a.block) >= avroBlockBytes {
		a.err = a.flush()
	}
	return a.err
}

// flush writes the buffered rows as one block: row count, byte size,
// Snappy data followed by the CRC-32 of the uncompressed data (Avro's
// snappy codec), sync marker.
func (a *avroWriter) flush() error {
	if a.count == 0 {
		return nil
	}
	n := snappy.MaxEncodedLen(len(a.block))
	if cap(a.out) < n+4 {
		a.out = make([]byte, 0, n+4)
	}
	data := snappy.Encode(a.out[:n], a.block)
	data = binary.BigEndian.AppendUint32(data, crc32.ChecksumIEEE(a.block))
	var hdr [2 * binary.MaxVarintLen64]byte
	head := appendLong(appendLong(hdr[:0], a.count), int64(len(data)))
	if _, err := a.w.Write(head); err != nil {
		return fmt.Errorf("export: avro block: %w", err)
	}
	if _, err := a.w.Write(data); err != nil {
		return fmt.Errorf("export: avro block: %w", err)
	}
	if _, err := a.w.Write(a.sync[:]); err != nil {
		return fmt.Errorf("export: avro block: %w", err)
	}
	a.block, a.count = a.block[:0], 0
	return nil
}

func (a *avroWriter) Close() error {
	if a.closed {
		return a.err
	}
	a.closed = true
	if a.err == nil {
		a.err = a.flush()
	}
	return a.err
}
