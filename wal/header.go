package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tabuladb/tabula/vfs"
)

// Segment header, format version 2 (written since; version 1 is read):
//
//	+---------------+-------------+
//	| "TABULOG" (7) | version (1) |  version 1 ends here (headerLenV1)
//	+---------------+-------------+-----------------+-----------+
//	| prev segment (8)            | prev length (8) | crc (4)   |
//	+-----------------------------+-----------------+-----------+
//	  prev segment = number of the segment before this one, uint64 LE
//	  prev length  = that segment's final size in bytes, uint64 LE
//	  crc          = CRC32C over the 24 bytes before it, LE
//
// A segment started by rotation records its predecessor, whose writer
// knew its final size exactly: a reader that sees segment n+1 can prove
// it read every byte of segment n, which an object store's listing alone
// cannot (a listing may show n+1 while it still lags on n's last parts).
// The first segment a Log opens records none (prev segment 0): the
// segments before it were written by another process, whose final sizes
// this one cannot vouch for.
const (
	formatVersion = 2
	headerLenV1   = len(segmentMagic) + 1
	headerLen     = headerLenV1 + 8 + 8 + 4
)

// Header is what a segment's header says.
type Header struct {
	// Version is the segment's format version.
	Version int
	// Prev is the number of the segment before this one and PrevLen its
	// final size in bytes; Prev is 0 when the header records none
	// (version 1, or the first segment a Log opened).
	Prev    uint64
	PrevLen int64
}

// Len returns the length of the header in the file.
func (h Header) Len() int {
	if h.Version == 1 {
		return headerLenV1
	}
	return headerLen
}

// appendHeader appends a version 2 header recording prev and its length.
func appendHeader(dst []byte, prev uint64, prevLen int64) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = append(dst, formatVersion)
	dst = binary.LittleEndian.AppendUint64(dst, prev)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(prevLen))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// headerVerdict is what parseHeader makes of a segment's first bytes.
type headerVerdict int

const (
	headerOK      headerVerdict = iota
	headerPartial               // a prefix of a header: torn, if the segment is the last
	headerBad                   // not a header; the error says why
)

// parseHeader parses the header at the start of b, which holds the
// first min(headerLen, file size) bytes of a segment.
func parseHeader(b []byte) (Header, headerVerdict, string) {
	if len(b) < headerLenV1 {
		for _, v := range []byte{1, formatVersion} {
			if bytes.HasPrefix(append([]byte(segmentMagic), v), b) {
				return Header{}, headerPartial, ""
			}
		}
		if isZero(b) {
			return Header{}, headerPartial, ""
		}
		return Header{}, headerBad, "bad segment header"
	}
	if string(b[:len(segmentMagic)]) != segmentMagic {
		if isZero(b) {
			return Header{}, headerPartial, ""
		}
		return Header{}, headerBad, "bad segment header"
	}
	switch v := b[len(segmentMagic)]; v {
	case 1:
		return Header{Version: 1}, headerOK, ""
	case formatVersion:
		if len(b) < headerLen {
			return Header{}, headerPartial, ""
		}
		if crc32.Checksum(b[:headerLen-4], castagnoli) != binary.LittleEndian.Uint32(b[headerLen-4:]) {
			if isZero(b[headerLenV1:headerLen]) {
				return Header{}, headerPartial, ""
			}
			return Header{}, headerBad, "segment header checksum mismatch"
		}
		return Header{
			Version: formatVersion,
			Prev:    binary.LittleEndian.Uint64(b[headerLenV1:]),
			PrevLen: int64(binary.LittleEndian.Uint64(b[headerLenV1+8:])),
		}, headerOK, ""
	default:
		return Header{}, headerBad, fmt.Sprintf("unknown format version %d", v)
	}
}

// ReadHeader reads the header of segment n in dir on fsys (nil: the local
// disk). A header cut short (a segment whose creation a crash
// interrupted; replay reads it as empty) records nothing: Header{}. A
// damaged one is an error wrapping ErrCorrupt.
func ReadHeader(fsys vfs.FS, dir string, n uint64) (Header, error) {
	path := segmentPath(dir, n)
	f, err := vfs.Or(fsys).Open(path)
	if err != nil {
		return Header{}, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	b, err := readHead(f, path)
	if err != nil {
		return Header{}, err
	}
	h, verdict, why := parseHeader(b)
	if verdict == headerBad {
		return Header{}, corruptf(path, 0, "%s", why)
	}
	return h, nil
}

// readHead reads the first min(headerLen, size) bytes of f.
func readHead(f vfs.Readable, path string) ([]byte, error) {
	b := make([]byte, min(int64(headerLen), f.Size()))
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("wal: read %s: %w", path, err)
	}
	return b, nil
}
