package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tabuladb/tabula/vfs"
)

// Segment header, format version 3 (written since; versions 1 and 2 are
// read):
//
//	+---------------+-------------+
//	| "TABULOG" (7) | version (1) |  version 1 ends here (headerLenV1)
//	+---------------+-------------+
//	| segment (8)                 |  version 3 only
//	+-----------------------------+
//	| prev segment (8)            |
//	| prev length (8)             |
//	| crc (4)                     |  36 bytes in all (version 2: 28)
//	+-----------------------------+
//	  segment      = this segment's own number, uint64 LE
//	  prev segment = number of the segment before this one, uint64 LE
//	  prev length  = that segment's final size in bytes, uint64 LE
//	  crc          = CRC32C over the bytes before it, LE
//
// Version 2 is the same without the segment field (28 bytes). Version 3
// exists for recycling (recycle.go): a segment file may be an old
// segment's file renamed and overwritten in place, so the bytes after its
// last record are whatever its earlier lives left there. Its header
// names the segment it was written as, and each record's checksum covers
// that number too (format.go), so nothing of an earlier life, a header
// or a record, passes for this one's.
//
// A segment started by rotation records its predecessor, whose writer
// knew its final size exactly: a reader that sees segment n+1 can prove
// it read every byte of segment n, which an object store's listing alone
// cannot (a listing may show n+1 while it still lags on n's last parts),
// and knows where n's records end even when stale bytes follow them.
// The first segment a Log opens records none (prev segment 0): the
// segments before it were written by another process, whose final sizes
// this one cannot vouch for.
const (
	formatVersion = 3
	headerLenV1   = len(segmentMagic) + 1
	headerLenV2   = headerLenV1 + 8 + 8 + 4
	headerLen     = headerLenV1 + 8 + 8 + 8 + 4
)

// Header is what a segment's header says.
type Header struct {
	// Version is the segment's format version.
	Version int
	// Seg is the number the segment was written as (version 3; 0 before).
	Seg uint64
	// Prev is the number of the segment before this one and PrevLen its
	// final size in bytes; Prev is 0 when the header records none
	// (version 1, or the first segment a Log opened).
	Prev    uint64
	PrevLen int64
}

// Len returns the length of the header in the file.
func (h Header) Len() int {
	switch h.Version {
	case 1:
		return headerLenV1
	case 2:
		return headerLenV2
	}
	return headerLen
}

// recycled reports whether a segment of this header's version may be a
// recycled file, with stale bytes after its records.
func (h Header) recycled() bool { return h.Version >= 3 }

// appendHeader appends the current version's header of segment n,
// recording prev and its length.
func appendHeader(dst []byte, n, prev uint64, prevLen int64) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = append(dst, formatVersion)
	dst = binary.LittleEndian.AppendUint64(dst, n)
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
	// headerStale is a version 3 header that is not segment n's: another
	// segment's (a recycled file whose new header a crash kept from the
	// disk) or one whose checksum fails (a crash while it was being
	// overwritten). Whatever follows it is from the file's earlier
	// lives, unless a record of segment n follows (then it is damage).
	headerStale
)

// parseHeader parses the header at the start of b, which holds the
// first min(headerLen, file size) bytes of segment n.
func parseHeader(b []byte, n uint64) (Header, headerVerdict, string) {
	if len(b) < headerLenV1 {
		for _, v := range []byte{1, 2, formatVersion} {
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
	v := int(b[len(segmentMagic)])
	var h Header
	switch v {
	case 1:
		return Header{Version: 1}, headerOK, ""
	case 2, formatVersion:
		h.Version = v
	default:
		return Header{}, headerBad, fmt.Sprintf("unknown format version %d", v)
	}
	hlen := h.Len()
	if len(b) < hlen {
		return Header{}, headerPartial, ""
	}
	if crc32.Checksum(b[:hlen-4], castagnoli) != binary.LittleEndian.Uint32(b[hlen-4:]) {
		switch {
		case isZero(b[headerLenV1:hlen]):
			return Header{}, headerPartial, ""
		case v == 2:
			return Header{}, headerBad, "segment header checksum mismatch"
		}
		return Header{}, headerStale, "segment header checksum mismatch"
	}
	rest := b[headerLenV1:]
	if v == formatVersion {
		h.Seg = binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if h.Seg != n {
			return Header{}, headerStale, fmt.Sprintf("the header is segment %d's", h.Seg)
		}
	}
	h.Prev = binary.LittleEndian.Uint64(rest)
	h.PrevLen = int64(binary.LittleEndian.Uint64(rest[8:]))
	return h, headerOK, ""
}

// ReadHeader reads the header of segment n in dir on fsys (nil: the local
// disk). A header cut short (a segment whose creation a crash
// interrupted; replay reads it as empty) records nothing: Header{}; so
// does a header left from the file's earlier life as another segment, or
// one torn while it was being overwritten (a recycled segment whose
// creation a crash interrupted): reading the segment itself tells
// whether that is a torn last segment or damage. Any other damaged header
// is an error wrapping ErrCorrupt.
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
	h, verdict, why := parseHeader(b, n)
	switch verdict {
	case headerBad:
		return Header{}, corruptf(path, 0, "%s", why)
	case headerStale, headerPartial:
		return Header{}, nil
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
