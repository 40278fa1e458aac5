package wal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tabuladb/tabula/vfs"
)

// scanBudget bounds the bytes checksummed while looking for a valid record
// after a bad one in the last segment. Past it the damage is reported as
// corruption rather than truncated: refusing to open is recoverable by an
// operator, silently dropping records is not.
const scanBudget = 1 << 30

// Replay reads every segment in dir on fsys (nil: the local disk) numbered
// >= from, in order, calling fn with each record's payload. The payload
// slice is only valid during the call. It returns the number of the last
// segment seen (0 if none).
//
// A torn tail of the last segment (a short record header, a length past the
// end of the file, a checksum mismatch with no valid record after it, an
// all-zero rest of the file, or a torn segment header) is what a crash in the
// middle of a write leaves behind: the file is truncated to its last good
// record, fsynced, and replay succeeds. A bad record anywhere else, a bad
// segment header, or a gap in the segment numbers is an error wrapping
// ErrCorrupt naming the file and byte offset. An error from fn stops the
// replay and is returned as is.
//
// Replay is never cut short by a context: a partly replayed log is useless.
func Replay(fsys vfs.FS, dir string, from uint64, fn func(payload []byte) error) (last uint64, err error) {
	fsys = vfs.Or(fsys)
	nums, err := listSegments(fsys, dir)
	if err != nil {
		return 0, err
	}
	var buf []byte
	for i, n := range nums {
		if n < from {
			continue
		}
		if last != 0 && n != last+1 {
			return last, fmt.Errorf("%w: %s: segment %s is missing", ErrCorrupt, dir, segmentName(last+1))
		}
		last = n
		isLast := i == len(nums)-1
		var next Header
		if !isLast {
			if next, err = ReadHeader(fsys, dir, nums[i+1]); err != nil {
				return last, err
			}
		}
		var end int64
		if buf, end, err = replaySegment(fsys, segmentPath(dir, n), isLast, buf, fn); err != nil {
			return last, err
		}
		if err := CheckEnd(dir, n, end, next); err != nil {
			return last, err
		}
	}
	return last, nil
}

// CheckEnd checks that segment n of the log in dir, read to offset end,
// was read whole, when next (the header of segment n+1) records n's final
// size: a shorter read means bytes the writer wrote are missing (an
// object store's listing that lags on n's last parts while it shows n+1,
// or lost writes), a longer one bytes it never wrote. Either is an error
// wrapping ErrCorrupt naming both sizes.
func CheckEnd(dir string, n uint64, end int64, next Header) error {
	if next.Prev == 0 {
		return nil // not recorded (format version 1, or a log opened after n)
	}
	if next.Prev != n {
		return corruptf(segmentPath(dir, n+1), 0, "its header records segment %d before it, not %d", next.Prev, n)
	}
	if end != next.PrevLen {
		return corruptf(segmentPath(dir, n), end, "the segment ends here, but the next one records that it was %d bytes long: %d bytes are missing or extra (a store listing that lags, or lost writes)", next.PrevLen, next.PrevLen-end)
	}
	return nil
}

// replaySegment replays one segment file, truncating a torn tail, and
// returns where its records end. buf is scratch space for payloads; the
// possibly grown buffer is returned for reuse.
func replaySegment(fsys vfs.FS, path string, isLast bool, buf []byte, fn func([]byte) error) ([]byte, int64, error) {
	buf, end, torn, err := scanSegment(fsys, path, 0, 0, isLast, buf, fn)
	if err != nil || !torn {
		return buf, end, err
	}
	return buf, end, truncate(fsys, path, end)
}

// ReadSegment calls fn with each record of segment n in dir from byte offset
// off (0: from the start, checking the segment header; otherwise the end an
// earlier call returned). It never changes the file: it serves readers of a
// log another process may still be writing (a server's shared log, read for
// recovery). A torn tail of a segment read as the last one ends the read
// without error, and end is where the torn record starts, so a later call
// from end sees it if its writer has since completed it. Damage anywhere
// else is an error wrapping ErrCorrupt.
func ReadSegment(fsys vfs.FS, dir string, n uint64, off int64, isLast bool, fn func(payload []byte) error) (end int64, err error) {
	_, end, _, err = scanSegment(vfs.Or(fsys), segmentPath(dir, n), off, 0, isLast, nil, fn)
	return end, err
}

// ReadSegmentTo calls fn with each record of segment n in dir from byte
// offset off up to offset to, the end of a record an earlier ReadSegment
// returned: it reads again what was read before, and nothing the writer
// appended since. A segment that no longer holds whole records up to to is
// an error wrapping ErrCorrupt.
func ReadSegmentTo(fsys vfs.FS, dir string, n uint64, off, to int64, fn func(payload []byte) error) error {
	path := segmentPath(dir, n)
	_, end, _, err := scanSegment(vfs.Or(fsys), path, off, to, false, nil, fn)
	if err == nil && end != to {
		err = corruptf(path, end, "the segment ends here, but %d bytes of records were read from it before", to)
	}
	return err
}

// ListSegments returns the numbers of the segments in dir on fsys (nil: the
// local disk), ascending. A missing dir has none.
func ListSegments(fsys vfs.FS, dir string) ([]uint64, error) {
	return listSegments(vfs.Or(fsys), dir)
}

// scanSegment reads the records of the segment at path from offset from (0
// checks the header first) up to offset limit (0: the end of the file). It
// returns the offset after the last good record, and torn=true when a torn
// tail (see Replay) starts there; damage that is not a torn tail of the
// last segment is an error.
func scanSegment(fsys vfs.FS, path string, from, limit int64, isLast bool, buf []byte, fn func([]byte) error) (_ []byte, end int64, torn bool, _ error) {
	f, err := fsys.Open(path)
	if err != nil {
		return buf, from, false, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	size := f.Size()
	if limit > 0 {
		size = min(size, limit) // read no further than limit
	}
	if size == 0 || size <= from {
		// An empty segment: created and not yet given its header before a
		// crash, or truncated by an earlier replay. It holds no records.
		return buf, from, false, nil
	}
	off := from
	if from == 0 {
		head, err := readHead(f, path)
		if err != nil {
			return buf, 0, false, err
		}
		h, verdict, why := parseHeader(head)
		switch verdict {
		case headerPartial:
			// What a crash while the segment was being created leaves.
			if isLast {
				tail, err := readTail(f, path, 0, size)
				if err != nil {
					return buf, 0, false, err
				}
				if size < int64(headerLen) || isZero(tail[headerLenV1:]) {
					return buf, 0, true, nil
				}
			}
			return buf, 0, false, corruptf(path, 0, "bad segment header")
		case headerBad:
			return buf, 0, false, corruptf(path, 0, "%s", why)
		}
		off = int64(h.Len())
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 256<<10)

	var hdr [frameHeaderLen]byte
	for off < size {
		rest := size - off
		var reason string
		if rest < frameHeaderLen {
			reason = "short record header"
		} else {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return buf, off, false, fmt.Errorf("wal: read %s: %w", path, err)
			}
			n := int64(binary.LittleEndian.Uint32(hdr[4:]))
			if n > rest-frameHeaderLen {
				reason = fmt.Sprintf("record length %d past end of file", n)
			} else {
				if int64(cap(buf)) < n {
					buf = make([]byte, n)
				}
				buf = buf[:n]
				if _, err := io.ReadFull(r, buf); err != nil {
					return buf, off, false, fmt.Errorf("wal: read %s: %w", path, err)
				}
				crc := crc32.Update(crc32.Checksum(hdr[4:], castagnoli), castagnoli, buf)
				if crc != binary.LittleEndian.Uint32(hdr[:4]) {
					reason = "checksum mismatch"
				} else {
					if err := fn(buf); err != nil {
						return buf, off, false, err
					}
					off += frameHeaderLen + n
					continue
				}
			}
		}
		// A bad record at off.
		if !isLast {
			return buf, off, false, corruptf(path, off, "%s", reason)
		}
		tail, err := readTail(f, path, off, size)
		if err != nil {
			return buf, off, false, err
		}
		if at, found, ok := findRecord(tail); !ok {
			return buf, off, false, corruptf(path, off, "%s, and the rest of the file is too large to prove it a torn tail", reason)
		} else if found {
			return buf, off, false, corruptf(path, off, "%s, with a valid record after it at offset %d", reason, off+at)
		}
		return buf, off, true, nil
	}
	return buf, off, false, nil
}

// readTail reads the bytes of f (at path) from off to size.
func readTail(f vfs.Readable, path string, off, size int64) ([]byte, error) {
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil {
		return nil, fmt.Errorf("wal: read %s: %w", path, err)
	}
	return tail, nil
}

// findRecord looks for a valid record starting anywhere in b after its first
// byte. It reports ok=false when it gave up after checksumming scanBudget
// bytes.
func findRecord(b []byte) (at int64, found, ok bool) {
	budget := int64(scanBudget)
	for q := 1; q+frameHeaderLen <= len(b); q++ {
		n := int64(binary.LittleEndian.Uint32(b[q+4:]))
		end := int64(q) + frameHeaderLen + n
		if end > int64(len(b)) {
			continue
		}
		if budget -= 4 + n; budget < 0 {
			return 0, false, false
		}
		if crc32.Checksum(b[q+4:end], castagnoli) == binary.LittleEndian.Uint32(b[q:]) {
			return int64(q), true, true
		}
	}
	return 0, false, true
}

// truncate cuts the file at path to size bytes and fsyncs it.
func truncate(fsys vfs.FS, path string, size int64) error {
	if err := fsys.Truncate(path, size); err != nil {
		return fmt.Errorf("wal: truncate torn tail of %s at %d: %w", path, size, err)
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
