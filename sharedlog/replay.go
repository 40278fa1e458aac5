package sharedlog

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tabuladb/tabula/corruption"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// Replay calls fn, in log order, with the payload of every record of tablet
// at epoch in the log called name, from segment from on. The payload is only
// valid during the call. The log may be this one, or another server's
// (dead, or alive and fenced). A segment from..last that is missing, or
// one that reads shorter than the next segment records it was when its
// writer moved on (parts an object store does not list yet, or lost), is
// an error wrapping wal.ErrCorrupt naming the log and the segment:
// the records the manifest relies on are not all there.
func (l *Log) Replay(name, tablet string, epoch, from uint64, fn func(payload []byte) error) error {
	if !plainName(name) {
		return fmt.Errorf("%w: a manifest names the shared log %q, which is not a plain name", wal.ErrCorrupt, name)
	}
	if name == l.opts.Name {
		// Our own log, still being written: read it directly; caching
		// what is still growing would only hold memory.
		return readDirect(l.opts.FS, Dir(l.opts.Root, name), tablet, epoch, from, 0, fn)
	}
	return l.cache.replay(name, tablet, epoch, from, fn)
}

// readDirect reads the log in dir from segment from on and calls fn with
// the records of tablet at epoch, skipping the first skip of them in
// segment from (the cache held those).
func readDirect(fsys vfs.FS, dir, tablet string, epoch, from uint64, skip int, fn func([]byte) error) error {
	return scan(fsys, dir, from, newScanState(), func(seg uint64, p []byte) error {
		t, e, rest, err := parseTag(p)
		if err != nil || string(t) != tablet {
			return err
		}
		if seg == from && skip > 0 {
			skip--
			return nil
		}
		if e != epoch {
			return nil
		}
		return fn(rest)
	})
}

// scanState is what scan read of a log, for a later scan to go on from.
type scanState struct {
	ends   map[uint64]int64 // where the records read of each segment end
	sealed map[uint64]bool  // segments read whole: they no longer change
	// tolerant scans (the cache's) read every segment for all tablets
	// and record in failed the segments whose reading failed, with the
	// error; a later scan does not read them again.
	tolerant bool
	failed   map[uint64]error
}

func newScanState() *scanState {
	return &scanState{ends: map[uint64]int64{}, sealed: map[uint64]bool{}, failed: map[uint64]error{}}
}

// isDamage reports whether err says that a segment is damaged or gone
// (as opposed to the store failing now).
func isDamage(err error) bool {
	return errors.Is(err, corruption.ErrCorrupt) || errors.Is(err, fs.ErrNotExist)
}

// scan reads the segments of the log in dir from segment from on,
// continuing each from the offset st.ends holds for it, and calls fn with
// each record.
//
// A segment is sealed (never read again) once it was read to the size the
// next segment's header records for it (wal.Header; a segment
// started by rotation records its predecessor's final size; a recycled
// segment is read no further, as stale bytes follow). A segment
// that reads short of that is read once more (a store's listing may lag
// on its last parts while it shows the next segment), and if it is still
// short that is an error wrapping wal.ErrCorrupt: replay never stops
// early nor skips records silently. A segment whose successor records
// nothing (format version 1) is sealed as soon as a later one exists, as
// before.
//
// scan checks that segments from..the last are all there, except when
// st.tolerant (the cache), which reads the segments for all tablets from the
// first and leaves each replay to check (checkFrom) the ones it needs: a
// segment left below a gap (its deletion failed and the server died
// before retrying), or one whose deletion was cut short and reads short,
// must not make the log unreadable. A tolerant scan records a segment's
// error in st.failed and goes on with the next segment.
func scan(fsys vfs.FS, dir string, from uint64, st *scanState, fn func(seg uint64, p []byte) error) error {
	tolerant := st.tolerant
	segs, err := wal.ListSegments(fsys, dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return fmt.Errorf("%w: shared log %s holds no segment (a manifest relies on segment %d of it)", wal.ErrCorrupt, dir, from)
	}
	var prev uint64
	for i, n := range segs {
		if n < from {
			continue
		}
		if prev == 0 && from > 0 && n != from {
			return fmt.Errorf("%w: segment %d of shared log %s is missing (the log starts at %d)", wal.ErrCorrupt, from, dir, n)
		}
		if prev != 0 && n != prev+1 && !tolerant {
			return fmt.Errorf("%w: segment %d of shared log %s is missing", wal.ErrCorrupt, prev+1, dir)
		}
		prev = n
		if st.sealed[n] || st.failed[n] != nil {
			continue
		}
		last := i == len(segs)-1
		err := readSegment(fsys, dir, n, last, segs, i, st, fn)
		switch {
		case err == nil:
			continue
		case !isDamage(err):
			return fmt.Errorf("sharedlog: %w", err)
		case !errors.Is(err, wal.ErrCorrupt):
			// The store's own word for it (a part of the segment
			// missing, the segment gone since it was listed).
			err = fmt.Errorf("%w: segment %d of shared log %s cannot be read: %w", wal.ErrCorrupt, n, dir, err)
		default:
			err = fmt.Errorf("sharedlog: %w", err)
		}
		if !tolerant {
			return err
		}
		st.failed[n] = err
	}
	if prev == 0 && from > 0 {
		return fmt.Errorf("%w: segment %d of shared log %s is missing (the log ends at %d)", wal.ErrCorrupt, from, dir, segs[len(segs)-1])
	}
	return nil
}

// readSegment reads segment n (segs[i]) from where st left it and seals
// it once it is proven whole (see scan).
func readSegment(fsys vfs.FS, dir string, n uint64, last bool, segs []uint64, i int, st *scanState, fn func(seg uint64, p []byte) error) error {
	var next wal.Header
	if !last && segs[i+1] == n+1 {
		var err error
		if next, err = wal.ReadHeader(fsys, dir, n+1); err != nil {
			return err
		}
	}
	read := func(isLast bool) error {
		nx := &next // the zero Header after a gap: it records nothing
		if isLast {
			nx = nil
		}
		end, err := wal.ReadSegment(fsys, dir, n, st.ends[n], nx, func(p []byte) error { return fn(n, p) })
		st.ends[n] = end
		return err
	}
	if err := read(last); err != nil {
		return err
	}
	if last {
		return nil
	}
	if next.Prev == n && st.ends[n] < next.PrevLen {
		// The listing showed n+1 before the last parts of n: open n
		// again (a new listing) and read on from where it stopped.
		if err := read(false); err != nil {
			return err
		}
	}
	if err := wal.CheckEnd(dir, n, st.ends[n], next); err != nil {
		return err
	}
	st.sealed[n] = true
	return nil
}
