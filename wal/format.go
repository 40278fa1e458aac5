package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/vfs"
)

// ErrCorrupt marks a damaged segment: a bad record that is not a torn tail of
// the last segment, a bad segment header, or a missing segment. Errors
// wrapping it name the file and the byte offset. It wraps
// corruption.ErrCorrupt.
var ErrCorrupt = corruption.New("wal: corrupt record")

// ErrClosed is returned by calls on a closed Log.
var ErrClosed = errors.New("wal: closed")

// Segment file layout:
//
//	+----------------------------+  offset 0
//	| segment header (header.go) |  headerLen bytes (8 in version 1,
//	+----------------------------+  28 in version 2)
//	| record 0                   |
//	| record 1                   |
//	| ...                        |
//	+----------------------------+  EOF, or where the next segment's
//	| stale bytes (version 3)    |  header says this one ends
//	+----------------------------+  EOF
//
// A version 3 segment may be a recycled file (recycle.go): its records
// are followed by what its earlier lives left, up to the end of the file.
//
// Record framing:
//
//	+-----------+-------------+-----------------+
//	| crc (4)   | length (4)  | payload (length)|
//	+-----------+-------------+-----------------+
//	  crc    = CRC32C (Castagnoli), little-endian, over
//	           segment number (8, uint64 LE; format version 3 only)
//	           + length + payload
//	  length = len(payload), uint32 little-endian
//
// The CRC covers the length so that a damaged length is caught rather than
// sending the reader off to a wrong offset unnoticed. Since version 3 it
// also covers the number of the segment the record was written to, which
// is in the file's header but not in the frame: a recycled segment file
// (recycle.go) holds, after its last record, the records of its earlier
// lives as other segments, and those fail their checksum here, so a
// reader never takes one for this segment's.
const (
	segmentMagic   = "TABULOG"
	frameHeaderLen = 8
	// maxPayload is the largest payload a record may carry.
	maxPayload = 1<<32 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends the framed record of tag followed by payload (one
// record) to dst, checksummed from seed (recordSeed of the segment it is
// written to).
func appendRecord(dst []byte, seed uint32, tag, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(tag)+len(payload)))
	dst = append(dst, tag...)
	dst = append(dst, payload...)
	crc := crc32.Update(seed, castagnoli, dst[start+4:])
	binary.LittleEndian.PutUint32(dst[start:], crc)
	return dst
}

// recordSeed is where the checksums of the records of segment n, of
// format version v, start: the CRC32C of n (8 bytes LE) from version 3, so
// that crc32.Update(seed, ...) over length and payload is the CRC32C of
// number, length and payload; 0 (nothing) before.
func recordSeed(v int, n uint64) uint32 {
	if v < 3 {
		return 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return crc32.Checksum(b[:], castagnoli)
}

// segmentName returns the file name of segment number n.
func segmentName(n uint64) string { return fmt.Sprintf("%016d.log", n) }

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || len(digits) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// listSegments returns the numbers of the segment files in dir, ascending.
// A missing dir has no segments.
func listSegments(fsys vfs.FS, dir string) ([]uint64, error) {
	entries, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var nums []uint64
	for _, e := range entries {
		if n, ok := parseSegmentName(e.Name); ok && !e.IsDir {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

// corruptf returns an error wrapping ErrCorrupt that names the file and the
// byte offset of the damage.
func corruptf(path string, off int64, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, path, off, fmt.Sprintf(format, args...))
}

// segmentPath returns the path of segment number n in dir.
func segmentPath(dir string, n uint64) string { return filepath.Join(dir, segmentName(n)) }
