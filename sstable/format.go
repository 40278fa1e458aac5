package sstable

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// File layout (format versions 1 and 2). All fixed-width integers are
// little-endian.
//
//	+--------------------+---------+
//	| data block 0       | trailer |   sorted entries, maybe compressed
//	| ...                | trailer |
//	| data block N-1     | trailer |
//	+--------------------+---------+
//	| filter block       | trailer |   only when a bloom filter is built
//	| properties block   | trailer |
//	| index block        | trailer |   one entry per data block
//	+--------------------+---------+
//	| footer (64 bytes)            |
//	+------------------------------+
//
// Block trailer (5 bytes) after every block, as stored on disk:
//
//	+------------------+----------------------------------------------+
//	| type (1 byte)    | CRC32C (Castagnoli) of stored bytes + type   |
//	+------------------+----------------------------------------------+
//
// type is the compression of the stored bytes: 0 none, 1 snappy, 2 zstd
// (the values of families.Compression). A block handle (offset, length)
// names the stored bytes without the trailer.
//
// Footer (64 bytes) at the end of the file:
//
//	 0: index offset      uint64    8: index length      uint64
//	16: filter offset     uint64   24: filter length     uint64  (0, 0: no filter)
//	32: properties offset uint64   40: properties length uint64
//	48: format version    uint32   52: CRC32C of bytes [0, 52)   uint32
//	56: magic "\x89TABSST\x1a" (8 bytes)
//
// The data, index, filter and properties block encodings are drawn in
// block.go, bloom.go and properties.go. The versions differ only in the
// filter's hashing (bloom.go): version 2, written since issue 19, is built
// from one hash per entry; version 1 files are still read.
const (
	formatVersion    = 2
	minFormatVersion = 1
	magic            = "\x89TABSST\x1a"
	footerLen        = 64
	trailerLen       = 5

	// maxBlockSize bounds a decoded block: one entry of a 64 MiB value and
	// the largest keys fits with room to spare.
	maxBlockSize = 1 << 28
	// maxEntrySize bounds one entry handed to Writer.Add.
	maxEntrySize = maxBlockSize - 1<<20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// blockHandle locates a block's stored bytes (without its trailer).
type blockHandle struct {
	offset, length uint64
}

// end returns the offset just past the block's trailer.
func (h blockHandle) end() uint64 { return h.offset + h.length + trailerLen }

// footer is the decoded fixed-size tail of a file.
type footer struct {
	index, filter, properties blockHandle
	version                   uint32
}

func (f footer) encode() []byte {
	b := make([]byte, footerLen)
	for i, h := range []blockHandle{f.index, f.filter, f.properties} {
		binary.LittleEndian.PutUint64(b[16*i:], h.offset)
		binary.LittleEndian.PutUint64(b[16*i+8:], h.length)
	}
	binary.LittleEndian.PutUint32(b[48:], f.version)
	binary.LittleEndian.PutUint32(b[52:], crc32.Checksum(b[:52], crcTable))
	copy(b[56:], magic)
	return b
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var (
	errBadMagic    = errors.New("bad magic number (not a Tabula SSTable or truncated)")
	errBadChecksum = errors.New("checksum mismatch")
	errBadVersion  = errors.New("unsupported format version")
	errBadLength   = errors.New("wrong length")
)

// decodeFooter decodes and checks a footer; it does not check that the
// handles fit the file.
func decodeFooter(b []byte) (footer, error) {
	var f footer
	if len(b) != footerLen {
		return f, errBadLength
	}
	if string(b[56:]) != magic {
		return f, errBadMagic
	}
	if crc32.Checksum(b[:52], crcTable) != binary.LittleEndian.Uint32(b[52:]) {
		return f, errBadChecksum
	}
	f.version = binary.LittleEndian.Uint32(b[48:])
	if f.version < minFormatVersion || f.version > formatVersion {
		return f, errBadVersion
	}
	hs := []*blockHandle{&f.index, &f.filter, &f.properties}
	for i, h := range hs {
		h.offset = binary.LittleEndian.Uint64(b[16*i:])
		h.length = binary.LittleEndian.Uint64(b[16*i+8:])
	}
	return f, nil
}

// blockTrailer returns the trailer for stored bytes of the given type.
func blockTrailer(stored []byte, typ byte) [trailerLen]byte {
	var t [trailerLen]byte
	putTrailer(t[:], stored, typ)
	return t
}

// putTrailer writes the trailer for stored bytes of the given type into t
// (trailerLen bytes). The writer keeps t in its own struct: a local array
// would escape to the heap through crc32 and the file's Write, once per
// block.
func putTrailer(t, stored []byte, typ byte) {
	t[0] = typ
	crc := crc32.Update(crc32.Checksum(stored, crcTable), crcTable, t[:1])
	binary.LittleEndian.PutUint32(t[1:trailerLen], crc)
}

// checkTrailer verifies the trailer at the end of buf (stored bytes plus
// trailer) and returns the stored bytes and their type.
func checkTrailer(buf []byte) (stored []byte, typ byte, err error) {
	if len(buf) < trailerLen {
		return nil, 0, errBadLength
	}
	stored = buf[:len(buf)-trailerLen]
	t := buf[len(buf)-trailerLen:]
	crc := crc32.Update(crc32.Checksum(stored, crcTable), crcTable, t[:1])
	if crc != binary.LittleEndian.Uint32(t[1:]) {
		return nil, 0, errBadChecksum
	}
	return stored, t[0], nil
}
