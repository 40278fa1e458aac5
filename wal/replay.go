package wal

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tabuladb/tabula/vfs"
)

// A bad record in the last segment is a torn tail only if no valid record
// follows it; otherwise it is damage (refusing to open is recoverable by
// an operator, silently dropping acknowledged records is not).
//
// In format versions 1 and 2 (files only ever appended to, whose torn
// tails are short) the whole rest of the file is searched, a record
// starting at any byte, checksumming at most scanBudget bytes; past it
// the damage is reported as corruption rather than truncated.
//
// A version 3 segment may be a recycled file (recycle.go): the rest of
// it may be tens of MiB of an earlier life's bytes, in which a search for
// a record of any length starting at any byte costs the square of their
// length, and data a client wrote could make it exceed any budget. The
// search looks where records of this segment that followed damage would
// be: where the bad record's length says the next one starts, and any
// record starting and ending within tornWindow bytes after the bad one,
// checksumming at most tornBudget bytes (past it, none is found). Damage
// that is followed by nothing but records this search misses (a damaged
// length field and the next record ending more than tornWindow later)
// reads as a torn tail.
const (
	scanBudget = 1 << 30
	tornWindow = 1 << 20
	tornBudget = 128 << 20
)

// Replay reads every segment in dir on fsys (nil: the local disk) numbered
// >= from, in order, calling fn with each record's payload. The payload
// slice is only valid during the call. It returns the number of the last
// segment seen (0 if none).
//
// A torn tail of the last segment (a short record header, a length past the
// end of the file, a checksum mismatch with no valid record after it, an
// all-zero rest of the file, a torn segment header, or, in a recycled
// segment, a header or records left from the file's earlier life) is what
// a crash in the middle of a write leaves behind: the file is truncated to
// its last good record, fsynced, and replay succeeds. A bad record anywhere
// else, a bad segment header, or a gap in the segment numbers is an error
// wrapping ErrCorrupt naming the file and byte offset. An error from fn
// stops the replay and is returned as is.
//
// A version 3 segment before the last is read up to the size the next
// segment's header records for it: in a recycled segment what follows is
// stale. One whose successor records nothing was the last segment of an
// earlier Log, which cut its stale bytes on Close, or a replay did (the
// Log that followed opened after a replay, see Open).
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
		if buf, end, err = replaySegment(fsys, dir, n, isLast, next, buf, fn); err != nil {
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

// replaySegment replays segment n of dir, truncating a torn tail of the
// last segment, and returns where its records end. next is the header of
// the segment after it (when not last). buf is scratch space for
// payloads; the possibly grown buffer is returned for reuse.
func replaySegment(fsys vfs.FS, dir string, n uint64, isLast bool, next Header, buf []byte, fn func([]byte) error) ([]byte, int64, error) {
	path := segmentPath(dir, n)
	buf, end, torn, err := scanSegment(fsys, path, segScan{n: n, last: isLast, vouched: vouched(n, next)}, buf, fn)
	if err != nil || !torn || !isLast {
		return buf, end, err
	}
	return buf, end, truncate(fsys, path, end)
}

// vouched returns the final size of segment n that next, the header of the
// segment after it, records (0: none).
func vouched(n uint64, next Header) int64 {
	if next.Prev != n {
		return 0
	}
	return next.PrevLen
}

// ReadSegment calls fn with each record of segment n in dir from byte offset
// off (0: from the start; otherwise the end an earlier call returned). next
// is the header of the segment after n (the zero Header when it records
// nothing, or was not read), or nil when n is the last segment. It never
// changes the file: it serves readers of a log another process may still
// be writing (a server's shared log, read for recovery). A torn tail of
// the last segment ends the read without error, and end is where the torn
// record starts, so a later call from end sees it if its writer has since
// completed it. A recycled segment is read no further than the size next
// records for it. Damage anywhere else is an error wrapping ErrCorrupt.
func ReadSegment(fsys vfs.FS, dir string, n uint64, off int64, next *Header, fn func(payload []byte) error) (end int64, err error) {
	s := segScan{n: n, from: off, last: next == nil}
	if next != nil {
		s.vouched = vouched(n, *next)
	}
	_, end, _, err = scanSegment(vfs.Or(fsys), segmentPath(dir, n), s, nil, fn)
	return end, err
}

// ReadSegmentTo calls fn with each record of segment n in dir from byte
// offset off up to offset to, the end of a record an earlier ReadSegment
// returned: it reads again what was read before, and nothing the writer
// appended since. A segment that no longer holds whole records up to to is
// an error wrapping ErrCorrupt.
func ReadSegmentTo(fsys vfs.FS, dir string, n uint64, off, to int64, fn func(payload []byte) error) error {
	path := segmentPath(dir, n)
	_, end, _, err := scanSegment(vfs.Or(fsys), path, segScan{n: n, from: off, to: to, vouched: to}, nil, fn)
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

// segScan says which segment scanSegment reads, and how far.
type segScan struct {
	n    uint64 // the segment's number (version 3 checksums cover it)
	from int64  // the offset to start from: 0 checks the header first
	// to, when set, is the end of the file for this scan (every version).
	to int64
	// last says n is the last segment: a torn tail ends the scan.
	last bool
	// vouched is the size the next segment's header records for n (0:
	// none): a version 3 segment is read up to it and no further (stale
	// bytes may follow).
	vouched int64
}

// scanSegment reads the records of the segment at path as s says. It
// returns the offset after the last good record, and torn=true when a
// torn tail (see Replay) starts there; damage that is not a torn tail is
// an error.
func scanSegment(fsys vfs.FS, path string, s segScan, buf []byte, fn func([]byte) error) (_ []byte, end int64, torn bool, _ error) {
	f, err := fsys.Open(path)
	if err != nil {
		return buf, s.from, false, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	size := f.Size()
	if s.to > 0 {
		size = min(size, s.to) // read no further than to
	}
	if size == 0 || size <= s.from {
		// An empty segment: created and not yet given its header before a
		// crash, or truncated by an earlier replay. It holds no records.
		return buf, s.from, false, nil
	}
	// A writer may be overwriting a recycled file while it is read (a
	// server replaying from its own log, or from a fenced one's that
	// still runs): a header or record read half new and half stale looks
	// bad, and the bytes after it, read a moment later, may hold the
	// writer's next records, a valid record after a bad one. The writer
	// fills the file in order, so that record being whole means the bad
	// one is whole by now, unless it is damage: it is read once more
	// before it is called damage.
	var h Header
	var verdict headerVerdict
	var why string
	for again := false; ; again = true {
		head, err := readHead(f, path)
		if err != nil {
			return buf, s.from, false, err
		}
		h, verdict, why = parseHeader(head, s.n)
		if verdict != headerStale || !s.last || s.from > 0 {
			break
		}
		// A recycled file renamed to this segment, whose new header a
		// crash kept from the disk (or tore): its records are all of its
		// earlier life, unless one of this segment's follows.
		at, found, err := provenTorn(f, path, tornAt{off: 0, next: int64(headerLen), size: size, version: formatVersion,
			seed: recordSeed(formatVersion, s.n)})
		switch {
		case errors.Is(err, errTooLarge):
			return buf, 0, false, corruptf(path, 0, "%s, %v", why, err)
		case err != nil:
			return buf, 0, false, err
		case !found:
			return buf, 0, true, nil
		case again:
			return buf, 0, false, corruptf(path, 0, "%s, with a valid record after it at offset %d", why, at)
		}
	}
	if s.from > 0 && verdict != headerOK {
		// Records were read past this header before: it was whole then.
		return buf, s.from, false, corruptf(path, 0, "the segment header no longer reads (%s)", cmp.Or(why, "cut short"))
	}
	switch verdict {
	case headerPartial:
		// What a crash while the segment was being created leaves.
		if s.last {
			tail, err := readTail(f, path, 0, size)
			if err != nil {
				return buf, 0, false, err
			}
			if size < int64(headerLen) || isZero(tail[headerLenV1:]) {
				return buf, 0, true, nil
			}
		}
		return buf, 0, false, corruptf(path, 0, "bad segment header")
	case headerStale, headerBad:
		return buf, 0, false, corruptf(path, 0, "%s", why)
	}
	off := max(s.from, int64(h.Len()))
	if h.recycled() && s.vouched > 0 {
		size = min(size, s.vouched) // stale bytes may follow
	}
	seed := recordSeed(h.Version, s.n)
	if size <= off {
		return buf, off, false, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 256<<10)

	var hdr [frameHeaderLen]byte
	reread := int64(-1) // the offset of the bad record read again, if any
	for off < size {
		rest := size - off
		var reason string
		next := int64(-1) // where the next record starts if this one's length is right
		if rest < frameHeaderLen {
			reason = "short record header"
		} else {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return buf, off, false, fmt.Errorf("wal: read %s: %w", path, err)
			}
			n := int64(binary.LittleEndian.Uint32(hdr[4:]))
			next = off + frameHeaderLen + n
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
				crc := crc32.Update(crc32.Update(seed, castagnoli, hdr[4:]), castagnoli, buf)
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
		if !s.last {
			return buf, off, false, corruptf(path, off, "%s", reason)
		}
		at, found, err := provenTorn(f, path, tornAt{off: off, next: next, size: size, version: h.Version, seed: seed})
		switch {
		case errors.Is(err, errTooLarge):
			return buf, off, false, corruptf(path, off, "%s, %v", reason, err)
		case err != nil:
			return buf, off, false, err
		case !found:
			return buf, off, true, nil
		case reread != off:
			reread = off
			r.Reset(io.NewSectionReader(f, off, size-off))
			continue
		}
		return buf, off, false, corruptf(path, off, "%s, with a valid record after it at offset %d", reason, at)
	}
	return buf, off, false, nil
}

// tornAt describes a bad record (or header) in the last segment.
type tornAt struct {
	off     int64  // where it starts
	next    int64  // where the next record starts if its length is right (-1: unknown)
	size    int64  // the end of the file
	version int    // the segment's format version
	seed    uint32 // the segment's records' checksum seed
}

// errTooLarge says the search after a bad record gave up.
var errTooLarge = errors.New("and the rest of the file is too large to prove it a torn tail")

// provenTorn looks for a valid record after the bad record (or header) t
// in f (see scanBudget): found says one starts at offset at, and then the
// bad one is not a torn tail. An error is a failed read, or errTooLarge.
func provenTorn(f vfs.Readable, path string, t tornAt) (at int64, found bool, err error) {
	if t.version < 3 {
		tail, err := readTail(f, path, t.off, t.size)
		if err != nil {
			return 0, false, err
		}
		at, found, ok := findRecord(tail, t.seed, scanBudget)
		if !ok {
			return 0, false, errTooLarge
		}
		return t.off + at, found, nil
	}
	if t.next > t.off {
		if ok, err := validAt(f, path, t.next, t.size, t.seed); err != nil || ok {
			return t.next, ok, err
		}
	}
	tail, err := readTail(f, path, t.off, min(t.size, t.off+tornWindow))
	if err != nil {
		return 0, false, err
	}
	at, found, _ = findRecord(tail, t.seed, tornBudget)
	return t.off + at, found, nil
}

// validAt reports whether a valid record, checksummed from seed, starts
// at off in f (at path) and ends by size. A record longer than
// tornBudget is not checked.
func validAt(f vfs.Readable, path string, off, size int64, seed uint32) (bool, error) {
	var hdr [frameHeaderLen]byte
	if off+frameHeaderLen > size {
		return false, nil
	}
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return false, fmt.Errorf("wal: read %s: %w", path, err)
	}
	n := int64(binary.LittleEndian.Uint32(hdr[4:]))
	if n > tornBudget || off+frameHeaderLen+n > size {
		return false, nil
	}
	crc := crc32.Update(seed, castagnoli, hdr[4:])
	chunk := make([]byte, min(n, 256<<10))
	for at := off + frameHeaderLen; at < off+frameHeaderLen+n; {
		b := chunk[:min(int64(len(chunk)), off+frameHeaderLen+n-at)]
		if _, err := f.ReadAt(b, at); err != nil {
			return false, fmt.Errorf("wal: read %s: %w", path, err)
		}
		crc = crc32.Update(crc, castagnoli, b)
		at += int64(len(b))
	}
	return crc == binary.LittleEndian.Uint32(hdr[:4]), nil
}

// readTail reads the bytes of f (at path) from off to size.
func readTail(f vfs.Readable, path string, off, size int64) ([]byte, error) {
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil {
		return nil, fmt.Errorf("wal: read %s: %w", path, err)
	}
	return tail, nil
}

// findRecord looks for a valid record, checksummed from seed, starting
// anywhere in b after its first byte and ending within b. It reports
// ok=false when it gave up after checksumming budget bytes.
func findRecord(b []byte, seed uint32, budget int64) (at int64, found, ok bool) {
	for q := 1; q+frameHeaderLen <= len(b); q++ {
		n := int64(binary.LittleEndian.Uint32(b[q+4:]))
		end := int64(q) + frameHeaderLen + n
		if end > int64(len(b)) {
			continue
		}
		if budget -= 4 + n; budget < 0 {
			return 0, false, false
		}
		if crc32.Update(seed, castagnoli, b[q+4:end]) == binary.LittleEndian.Uint32(b[q:]) {
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
